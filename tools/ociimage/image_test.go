package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// readTar opens an OCI image-layout tarball the way a consumer does: it
// unpacks it and reads the index through go-containerregistry's layout
// reader, which checks every blob against its digest.
func readTar(t *testing.T, path string) (v1.Image, string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dir := t.TempDir()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(dst, dir) {
			t.Fatalf("tar entry escapes: %s", h.Name)
		}
		if h.Typeflag == tar.TypeDir {
			os.MkdirAll(dst, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(dst), 0o755)
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		t.Fatalf("not an OCI layout: %v", err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("%d manifests in the index, want 1", len(im.Manifests))
	}
	desc := im.Manifests[0]
	img, err := idx.Image(desc.Digest)
	if err != nil {
		t.Fatal(err)
	}
	return img, desc.Annotations["org.opencontainers.image.ref.name"]
}

// files lists the image's single layer: name → header, and the contents
// of the files named in want.
func files(t *testing.T, img v1.Image, want ...string) (map[string]*tar.Header, map[string][]byte) {
	t.Helper()
	layers, err := img.Layers()
	if err != nil || len(layers) != 1 {
		t.Fatalf("layers: %d, %v; want 1", len(layers), err)
	}
	if mt, _ := layers[0].MediaType(); mt != types.OCILayer {
		t.Errorf("layer media type %s", mt)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	hdrs, data := map[string]*tar.Header{}, map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := "/" + strings.TrimSuffix(h.Name, "/")
		hdrs[name] = h
		for _, w := range want {
			if w == name {
				data[name], _ = io.ReadAll(tr)
			}
		}
	}
	return hdrs, data
}

// checkImage verifies what every omp image must be: OCI media types, a
// non-root user that /etc/passwd names, the gateway entrypoint, the labels,
// the three executables, and writable directories owned by that user.
func checkImage(t *testing.T, img v1.Image, version string) map[string][]byte {
	t.Helper()
	if mt, _ := img.MediaType(); mt != types.OCIManifestSchema1 {
		t.Errorf("manifest media type %s", mt)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", c.User)
	}
	if strings.Join(c.Entrypoint, " ") != "/gateway" {
		t.Errorf("entrypoint %q", c.Entrypoint)
	}
	if c.Labels["org.opencontainers.image.version"] != version || c.Labels["org.opencontainers.image.title"] != "omp" || c.Labels["org.opencontainers.image.source"] == "" {
		t.Errorf("labels %v", c.Labels)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" {
		t.Errorf("platform %s/%s", cf.OS, cf.Architecture)
	}
	names := []string{"/etc/passwd"}
	for _, b := range Binaries {
		names = append(names, "/"+b)
	}
	hdrs, data := files(t, img, names...)
	if !strings.Contains(string(data["/etc/passwd"]), "omp:x:65532:65532:") {
		t.Errorf("/etc/passwd does not name the image user: %q", data["/etc/passwd"])
	}
	for _, b := range Binaries {
		h := hdrs["/"+b]
		if h == nil || h.Typeflag != tar.TypeReg || h.Mode != 0o755 || h.Uid != 0 {
			t.Errorf("/%s: %+v, want a root-owned 0755 file", b, h)
		}
	}
	for _, d := range []string{"/home/omp", "/var/lib/omp"} {
		if h := hdrs[d]; h == nil || h.Typeflag != tar.TypeDir || h.Uid != 65532 || h.Mode != 0o700 {
			t.Errorf("%s: %+v, want a 0700 directory owned by 65532", d, h)
		}
	}
	if h := hdrs["/tmp"]; h == nil || h.Mode != 0o1777 {
		t.Errorf("/tmp: %+v, want 1777", h)
	}
	for name := range hdrs {
		if strings.HasPrefix(name, "/bin") || strings.HasSuffix(name, "/sh") {
			t.Errorf("the image carries %s; it must not need a shell", name)
		}
	}
	return data
}

func TestBuildImage(t *testing.T) {
	bin := t.TempDir()
	for _, b := range Binaries {
		if err := os.WriteFile(filepath.Join(bin, b), []byte("#fake "+b), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := Spec{BinDir: bin, Version: "v9.9.9", Revision: "abc123", Created: time.Unix(0, 0), Ref: "omp:v9.9.9"}
	out := filepath.Join(t.TempDir(), "omp.tar")
	if err := run(s, out); err != nil {
		t.Fatal(err)
	}
	img, ref := readTar(t, out)
	if ref != "omp:v9.9.9" {
		t.Errorf("ref name %q", ref)
	}
	data := checkImage(t, img, "v9.9.9")
	if !bytes.Equal(data["/broker"], []byte("#fake broker")) {
		t.Errorf("/broker holds %q", data["/broker"])
	}
	cf, _ := img.ConfigFile()
	if cf.Config.Labels["org.opencontainers.image.revision"] != "abc123" {
		t.Errorf("revision label %v", cf.Config.Labels)
	}

	// Reproducible: the same inputs give the same image digest and tarball.
	out2 := filepath.Join(t.TempDir(), "omp.tar")
	if err := run(s, out2); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if !bytes.Equal(a, b) {
		t.Error("two builds of the same inputs differ")
	}

	// A missing binary fails the build and writes nothing.
	os.Remove(filepath.Join(bin, "omp"))
	out3 := filepath.Join(t.TempDir(), "omp.tar")
	if err := run(s, out3); err == nil || !strings.Contains(err.Error(), "binary omp") {
		t.Fatalf("build without /omp: %v", err)
	}
	if _, err := os.Stat(out3); err == nil {
		t.Fatal("a failed build wrote the tarball")
	}
}

// maxImageBytes bounds the real image (four static binaries, compressed).
const maxImageBytes = 80 << 20

// TestBuiltImage checks the image `make image` wrote (OMP_IMAGE_TAR, set by
// `make image-test`): the config as above, and binaries that are static
// (no ELF interpreter: nothing in the image could provide one).
func TestBuiltImage(t *testing.T) {
	path := os.Getenv("OMP_IMAGE_TAR")
	if path == "" {
		t.Skip("OMP_IMAGE_TAR not set: `make image-test` builds the image and runs this")
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	img, _ := readTar(t, path)
	size, err := img.Size()
	if err != nil {
		t.Fatal(err)
	}
	layers, _ := img.Layers()
	var layerBytes int64
	for _, l := range layers {
		n, _ := l.Size()
		layerBytes += n
	}
	t.Logf("%s: tarball %d bytes, compressed layer %d bytes (manifest %d)", path, fi.Size(), layerBytes, size)
	if fi.Size() > maxImageBytes {
		t.Errorf("image tarball %d bytes > %d", fi.Size(), maxImageBytes)
	}
	cf, _ := img.ConfigFile()
	data := checkImage(t, img, cf.Config.Labels["org.opencontainers.image.version"])
	for _, b := range Binaries {
		f, err := elf.NewFile(bytes.NewReader(data["/"+b]))
		if err != nil {
			t.Fatalf("/%s is not an ELF executable: %v", b, err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("/%s is dynamically linked (has an ELF interpreter); build with CGO_ENABLED=0", b)
			}
		}
		if f.Machine != elf.EM_X86_64 {
			t.Errorf("/%s is for %v", b, f.Machine)
		}
	}
}
