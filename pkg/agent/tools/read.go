package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/ompgo/omp/pkg/llm"
)

const maxImageBytes = 20 << 20

// ReadDetails are the details of a read result.
type ReadDetails struct {
	Truncation *ReadTruncation `json:"truncation,omitempty"`
}

// ReadTruncation is details.truncation of read.
type ReadTruncation struct {
	Truncated   bool   `json:"truncated"`
	TruncatedBy string `json:"truncatedBy"`
	TotalLines  int    `json:"totalLines"`
	TotalBytes  int    `json:"totalBytes"`
	OutputLines int    `json:"outputLines"`
	OutputBytes int    `json:"outputBytes"`
}

var rangeSuffix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(.*):(\d+)-(\d+)$`) })

// Read returns the read tool.
func Read(env *Env) *Tool {
	return &Tool{
		Name: "read",
		Description: "Read a file. Text comes back raw (no line numbers), at most 2000 lines or 50KB per call; " +
			"use offset (1-based first line) and limit (line count) to page through larger files. " +
			"Images (png, jpeg, gif, webp) come back as images. A directory returns its sorted listing. " +
			"artifact://<id> reads the full output of an earlier truncated tool call.",
		Parameters: rawSchema(`{"type":"object","properties":{
			"path":{"type":"string","description":"File path, relative to the working directory, or artifact://<id>"},
			"offset":{"type":"number","description":"1-based line to start at"},
			"limit":{"type":"number","description":"Maximum number of lines"}},"required":["path"]}`),
		Run: func(ctx context.Context, args map[string]any, _ func(Result)) (Result, error) {
			p := str(args, "path")
			offset, _ := num(args, "offset")
			limit, hasLimit := num(args, "limit")
			if !hasLimit {
				limit = 0
			}
			if scheme, rest, ok := strings.Cut(p, "://"); ok && !strings.Contains(scheme, "/") {
				switch {
				case scheme == "artifact":
					text, err := env.Artifacts.Read(rest)
					if err != nil {
						return Result{}, err
					}
					return readText(text, p, offset, limit)
				case scheme == "rule" && env.Rule != nil:
					text, ok := env.Rule(rest)
					if !ok {
						return Result{}, Errorf("Rule not found: %s", rest)
					}
					return readText(text, p, offset, limit)
				}
				supported := "artifact://"
				if env.Rule != nil {
					supported += ", rule://"
				}
				return Result{}, Errorf("Unknown protocol: %s://\nSupported: %s", scheme, supported)
			}
			abs := env.Resolve(p)
			st, err := os.Stat(abs)
			if errors.Is(err, fs.ErrNotExist) {
				// "file:N-M" selects lines when no such file exists.
				if m := rangeSuffix().FindStringSubmatch(p); m != nil {
					a, _ := strconv.Atoi(m[2])
					b, _ := strconv.Atoi(m[3])
					if b >= a {
						args["path"], args["offset"], args["limit"] = m[1], float64(a), float64(b-a+1)
						return Read(env).Run(ctx, args, nil)
					}
				}
				return Result{}, Errorf("File not found: %s", p)
			}
			if err != nil {
				return Result{}, Errorf("Cannot read %s: %v", p, err)
			}
			if st.IsDir() {
				return listDir(abs, p)
			}
			data, err := os.ReadFile(abs)
			if err != nil {
				return Result{}, Errorf("Cannot read %s: %v", p, err)
			}
			if mime := imageType(data); mime != "" {
				if len(data) > maxImageBytes {
					return TextResult(fmt.Sprintf("[Image %s is %d bytes, over the 20MB limit]", p, len(data)), nil), nil
				}
				return Result{Content: []llm.Content{llm.Text("Read image file [" + mime + "]"),
					llm.Image(mime, base64.StdEncoding.EncodeToString(data))}}, nil
			}
			if bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0 {
				return Result{}, Errorf("Cannot read binary file: %s", p)
			}
			return readText(string(data), p, offset, limit)
		},
	}
}

func imageType(data []byte) string {
	switch t := http.DetectContentType(data); t {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
		return t
	}
	return ""
}

func readText(text, p string, offset, limit int) (Result, error) {
	lines := strings.Split(text, "\n")
	if strings.HasSuffix(text, "\n") {
		lines = lines[:len(lines)-1]
	}
	total := len(lines)
	if offset < 1 {
		offset = 1
	}
	if offset > total && !(total == 0 && offset == 1) {
		return Result{}, Errorf("Offset %d is beyond end of file (%d lines total)", offset, total)
	}
	sel := lines[offset-1:]
	userCut := false
	if limit > 0 && limit < len(sel) {
		sel, userCut = sel[:limit], true
	}
	if len(sel) > 0 && len(sel[0]) > DefaultMaxBytes {
		return TextResult(fmt.Sprintf("[Line %d is %s, exceeds 50KB limit. Use bash: sed -n '%dp' %s | head -c %d]",
			offset, formatSize(len(sel[0])), offset, p, DefaultMaxBytes), nil), nil
	}
	joined := strings.Join(sel, "\n")
	out, tr := TruncateHead(joined, DefaultMaxLines, DefaultMaxBytes)
	end := offset + len(sel) - 1
	var details ReadDetails
	switch {
	case tr != nil:
		end = offset + tr.OutputLines - 1
		if tr.TruncatedBy == "lines" {
			out += fmt.Sprintf("\n\n[Showing lines %d-%d of %d. Use offset=%d to continue]", offset, end, total, end+1)
		} else {
			out += fmt.Sprintf("\n\n[Showing lines %d-%d of %d (50KB limit). Use offset=%d to continue]", offset, end, total, end+1)
		}
		details.Truncation = &ReadTruncation{Truncated: true, TruncatedBy: tr.TruncatedBy, TotalLines: total,
			TotalBytes: len(text), OutputLines: tr.OutputLines, OutputBytes: tr.OutputBytes}
	case userCut:
		out += fmt.Sprintf("\n\n[%d more lines in file. Use offset=%d to continue]", total-end, end+1)
	}
	return TextResult(out, details), nil
}

func formatSize(n int) string {
	if n >= 1024*1024 {
		return fmt.Sprintf("%.1fMB", float64(n)/(1024*1024))
	}
	return fmt.Sprintf("%.1fKB", float64(n)/1024)
}

func listDir(abs, p string) (Result, error) {
	ents, err := os.ReadDir(abs)
	if err != nil {
		return Result{}, Errorf("Cannot list %s: %v", p, err)
	}
	names := make([]string, 0, len(ents))
	for _, e := range ents {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	sort.Strings(names)
	extra := 0
	if len(names) > 500 {
		extra = len(names) - 500
		names = names[:500]
	}
	out := strings.Join(names, "\n")
	if len(names) == 0 {
		out = "(empty directory)"
	}
	if extra > 0 {
		out += fmt.Sprintf("\n[… %d more entries]", extra)
	}
	return TextResult(out, nil), nil
}
