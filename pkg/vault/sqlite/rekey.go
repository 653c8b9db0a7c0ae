package sqlite

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ompgo/omp/pkg/vault/seal"
)

// rekeyPasses bounds the Reseal/Retire rounds of Rekey. One round is enough
// when every writer follows the protocol; the rest are a safety margin.
const rekeyPasses = 5

// ErrRekeyRunning reports that another rekey of the same key file is in
// progress.
var ErrRekeyRunning = errors.New("another rekey is running")

// RekeyResult reports a finished Rekey.
type RekeyResult struct {
	ActiveKeyID uint32   // the new key, the only one left in the key file
	RetiredIDs  []uint32 // keys dropped from the key file
	Resealed    int      // blobs re-sealed under the new key
}

// Rekey rotates the vault at dbPath to a new key in the key file at keyPath
// while other processes (a running broker) keep using the vault:
//
//  1. open the vault with the key file as it is (a key file that does not
//     open the vault fails here, before anything changes);
//  2. seal.AddKey: a new active key in the file, the old keys kept;
//  3. SetKeyring: the vault's active key becomes the new key in one write
//     transaction; every later write of every process seals under it (a
//     broker with Options.ReloadKeyring re-reads the key file);
//  4. Reseal until it reports 0, then Retire, which drops the old keys from
//     the file under the vault's write lock once no blob needs them.
//
// A failure after step 2 leaves the new key in the file next to the old
// ones, so nothing becomes unreadable; rerunning Rekey finishes the job.
// opts.ReloadKeyring is ignored. Two rekeys of one key file exclude each
// other through an advisory lock on keyPath+".lock"; the second fails with
// ErrRekeyRunning before it changes anything.
func Rekey(ctx context.Context, dbPath, keyPath string, opts Options) (RekeyResult, error) {
	var res RekeyResult
	unlock, err := lockFile(keyPath + ".lock")
	if err != nil {
		return res, err
	}
	defer unlock()
	cur, err := seal.LoadKeyFile(keyPath)
	if err != nil {
		return res, err
	}
	opts.ReloadKeyring = nil
	st, err := Open(ctx, dbPath, cur, opts)
	if err != nil {
		return res, err
	}
	defer st.Close()

	kr, err := seal.AddKey(keyPath)
	if err != nil {
		return res, fmt.Errorf("add key: %w", err)
	}
	res.ActiveKeyID = kr.ActiveID()
	if err := st.SetKeyring(ctx, kr); err != nil {
		return res, fmt.Errorf("activate key %08x (it stays in %s next to the old keys; rerun rekey): %w", kr.ActiveID(), keyPath, err)
	}

	retire := func(keep uint32) error {
		if keep != kr.ActiveID() {
			return fmt.Errorf("the vault's active key changed to %08x during the rekey to %08x (another rekey running?)", keep, kr.ActiveID())
		}
		before, err := seal.LoadKeyFile(keyPath)
		if err != nil {
			return err
		}
		after, err := seal.RetireKeys(keyPath, keep)
		if err != nil {
			return err
		}
		for _, id := range before.IDs() {
			if !after.Has(id) {
				res.RetiredIDs = append(res.RetiredIDs, id)
			}
		}
		slices.Sort(res.RetiredIDs)
		return nil
	}
	for pass := 1; ; pass++ {
		n, err := st.Reseal(ctx)
		res.Resealed += n
		if err != nil {
			return res, fmt.Errorf("re-seal (the new key stays in %s; rerun rekey to finish): %w", keyPath, err)
		}
		if n == 0 {
			err = st.Retire(ctx, retire)
			if err == nil {
				return res, nil
			}
			if !errors.Is(err, ErrResealPending) {
				return res, err
			}
		}
		if pass == rekeyPasses {
			return res, fmt.Errorf("re-seal did not settle after %d passes (a writer keeps sealing under an old key?); the old keys stay in %s: %w", pass, keyPath, ErrResealPending)
		}
	}
}
