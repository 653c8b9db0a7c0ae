// Command ociimage builds the omp container image without a container
// engine: one OCI image holding the static broker, gateway and omp
// binaries, run as an unprivileged user, written as an OCI image-layout
// tarball (`make image` → bin/omp-image.tar; load it with
// `podman load -i`, `skopeo copy oci-archive:…` or `ctr image import`).
//
// The image has no shell and no package manager: one layer with the three
// binaries, /etc/passwd and /etc/group naming the omp user (65532), and the
// directories the daemons write (/home/omp, /var/lib/omp, /tmp). The
// default entrypoint is the gateway; the broker runs with --entrypoint
// /broker (compose) or command: ["/broker"] (Kubernetes).
package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user: the conventional "nonroot" id of distroless images,
// also the runAsUser of deploy/k8s.
const (
	uid  = 65532
	user = "omp"
	home = "/home/omp"
)

// Binaries are the executables the image carries, by name in the image
// root (/broker, /gateway, /omp).
var Binaries = []string{"broker", "gateway", "omp"}

// Spec is what one build needs.
type Spec struct {
	BinDir   string    // holds the static broker, gateway and omp binaries
	Version  string    // org.opencontainers.image.version
	Revision string    // org.opencontainers.image.revision ("" = unknown)
	Created  time.Time // image and file times; zero = Unix epoch, for reproducible builds
	Ref      string    // org.opencontainers.image.ref.name in the layout index, e.g. "omp:v0.1.0"
}

// Labels returns the image labels (OCI annotation keys).
func (s Spec) Labels() map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":       "omp",
		"org.opencontainers.image.description": "omp-go auth broker (/broker), gateway (/gateway, default) and CLI (/omp)",
		"org.opencontainers.image.version":     s.Version,
		"org.opencontainers.image.source":      "https://github.com/ompgo/omp",
	}
	if s.Revision != "" {
		l["org.opencontainers.image.revision"] = s.Revision
	}
	return l
}

// Build assembles the image.
func Build(s Spec) (v1.Image, error) {
	layer, err := rootLayer(s)
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, layer)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: s.Created.UTC()}
	cf.Config = v1.Config{
		User:       fmt.Sprintf("%d:%d", uid, uid),
		Entrypoint: []string{"/gateway"},
		Cmd:        []string{"--bind", "0.0.0.0:4000"},
		Env:        []string{"PATH=/", "HOME=" + home},
		WorkingDir: home,
		ExposedPorts: map[string]struct{}{
			"4000/tcp": {}, // gateway
			"8765/tcp": {}, // broker
		},
		Volumes: map[string]struct{}{"/var/lib/omp": {}},
		Labels:  s.Labels(),
	}
	return mutate.ConfigFile(img, cf)
}

// rootLayer is the image's only layer.
func rootLayer(s Spec) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mod := s.Created.UTC()
	dir := func(name string, mode int64, owner int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: owner, Gid: owner, ModTime: mod, Format: tar.FormatPAX})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: mod, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, d := range []struct {
		name  string
		mode  int64
		owner int
	}{
		{"etc", 0o755, 0}, {"home", 0o755, 0}, {"home/omp", 0o700, uid},
		{"tmp", 0o1777, 0}, {"var", 0o755, 0}, {"var/lib", 0o755, 0}, {"var/lib/omp", 0o700, uid},
	} {
		if err := dir(d.name, d.mode, d.owner); err != nil {
			return nil, err
		}
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", user, uid, uid, user, home)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", user, uid)
	if err := file("etc/passwd", 0o644, []byte(passwd)); err != nil {
		return nil, err
	}
	if err := file("etc/group", 0o644, []byte(group)); err != nil {
		return nil, err
	}
	names := append([]string(nil), Binaries...)
	sort.Strings(names)
	for _, b := range names {
		data, err := os.ReadFile(filepath.Join(s.BinDir, b))
		if err != nil {
			return nil, fmt.Errorf("binary %s: %w", b, err)
		}
		if err := file(b, 0o755, data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// WriteTar writes img as an OCI image-layout tarball at out (oci-layout,
// index.json, blobs/sha256/…), through a temporary file renamed into place.
func WriteTar(img v1.Image, ref, out string) error {
	dir, err := os.MkdirTemp("", "ociimage-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	var opts []layout.Option
	if ref != "" {
		opts = append(opts, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref}))
	}
	if err := p.AppendImage(img, opts...); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tarDir(tmp, dir); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}

// tarDir writes the regular files and directories under root to w, in
// lexical order with fixed times, so the same image gives the same bytes.
func tarDir(w io.Writer, root string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || path == root {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		hdr := &tar.Header{Name: filepath.ToSlash(rel), Mode: 0o644, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if d.IsDir() {
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, hdr.Name+"/", 0o755
			return tw.WriteHeader(hdr)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		hdr.Typeflag, hdr.Size = tar.TypeReg, int64(len(data))
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err != nil {
		return err
	}
	return tw.Close()
}
