package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"
)

func main() {
	var s Spec
	fs := flag.NewFlagSet("ociimage", flag.ExitOnError)
	fs.StringVar(&s.BinDir, "bin", "bin/static", "directory holding the static broker, gateway and omp binaries")
	out := fs.String("out", "bin/omp-image.tar", "OCI image-layout tarball to write")
	fs.StringVar(&s.Version, "version", "dev", "image version label")
	fs.StringVar(&s.Revision, "revision", "", "source revision label")
	fs.StringVar(&s.Ref, "ref", "", `reference name in the layout index (default "omp:<version>")`)
	fs.Parse(os.Args[1:])
	if s.Ref == "" {
		s.Ref = "omp:" + s.Version
	}
	// SOURCE_DATE_EPOCH (reproducible-builds.org) sets the image time; the
	// default, the Unix epoch, makes the same binaries give the same image.
	s.Created = time.Unix(0, 0)
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		sec, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			fmt.Fprintln(os.Stderr, "ociimage: SOURCE_DATE_EPOCH is not a number of seconds")
			os.Exit(2)
		}
		s.Created = time.Unix(sec, 0)
	}
	if err := run(s, *out); err != nil {
		fmt.Fprintln(os.Stderr, "ociimage:", err)
		os.Exit(1)
	}
}

func run(s Spec, out string) error {
	img, err := Build(s)
	if err != nil {
		return err
	}
	if err := WriteTar(img, s.Ref, out); err != nil {
		return err
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	fi, err := os.Stat(out)
	if err != nil {
		return err
	}
	fmt.Printf("wrote %s (%s, %d bytes, %s)\n", out, s.Ref, fi.Size(), d)
	return nil
}
