package localprovider

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/bulwark-iac/bulwark/sdk"
)

// dataFile is the local provider's data source: a file under the root,
// read, never changed.
const dataFile = "file"

// MaxDataFileSize is the largest file the file data source reads: what it
// reads goes into plans and the state.
const MaxDataFileSize = 4 << 20

var _ sdk.DataReader = (*provider)(nil)

// dataSources returns the schema of every data source the provider reads.
func dataSources() []sdk.DataSourceType {
	return []sdk.DataSourceType{{
		Name:        dataFile,
		Description: fmt.Sprintf("a regular file under the root, read (at most %d bytes); never a symbolic or hard link, a folder, a fifo or a device, and never outside the root", MaxDataFileSize),
		Attributes: []sdk.Attribute{
			{Name: attrPath, Type: sdk.TypeString, Required: true, Description: "the file, relative to the root (slash separated; no .., no name starting with '.')"},
			{Name: "content", Type: sdk.TypeString, Computed: true, Description: "its content as text (null when it is not UTF-8: use content_base64)"},
			{Name: "content_base64", Type: sdk.TypeString, Computed: true, Description: "its content, base64 (standard encoding)"},
			{Name: "sha256", Type: sdk.TypeString, Computed: true, Description: "the SHA-256 of its content, hex"},
			{Name: "size", Type: sdk.TypeNumber, Computed: true, Description: "its size in bytes"},
		},
	}}
}

// ReadData reads a file data source. The path is checked lexically (as a
// resource's path is), then opened through an os.Root on the provider's
// root, so nothing resolves outside it; every folder on the way must be a
// folder, not a link, and the file itself a regular file with one link,
// opened without following a link and without blocking (a fifo swapped in
// after the check is refused, not waited on).
func (p *provider) ReadData(_ context.Context, req *sdk.ReadDataRequest) (*sdk.ReadDataResponse, error) {
	if req.Type != dataFile {
		return nil, sdk.Errorf("unknown data source type %q", req.Type)
	}
	s, _ := req.Config[attrPath].(string)
	rel, msg := checkRel(s)
	if msg != "" {
		return refusePath(msg)
	}
	p.mu.Lock()
	root, err := p.configuredRoot()
	absent := p.absent
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if absent {
		return refusePath(fmt.Sprintf("data %s: no file %s: the root %s does not exist", req.Name, rel, root))
	}
	b, err := readConfined(root, rel)
	if err != nil {
		return refusePath(fmt.Sprintf("data %s: %v", req.Name, err))
	}
	sum := sha256.Sum256(b)
	out := sdk.Attributes{
		attrPath:         rel,
		"content":        nil,
		"content_base64": base64.StdEncoding.EncodeToString(b),
		"sha256":         hex.EncodeToString(sum[:]),
		"size":           float64(len(b)),
	}
	if utf8.Valid(b) {
		out["content"] = string(b)
	}
	return &sdk.ReadDataResponse{Attributes: out}, nil
}

func refusePath(msg string) (*sdk.ReadDataResponse, error) {
	return &sdk.ReadDataResponse{Diagnostics: sdk.Diagnostics{sdk.AttributeErrorf([]string{attrPath}, "%s", msg)}}, nil
}

// readConfined reads the regular file rel (checked by checkRel) under root.
func readConfined(root, rel string) ([]byte, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open the root: %w", err)
	}
	defer r.Close()
	parts := strings.Split(rel, "/")
	for i := range parts[:len(parts)-1] {
		dir := strings.Join(parts[:i+1], "/")
		fi, err := r.Lstat(dir)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", rel, err)
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("file %s: %s is a symbolic link: the file data source follows none", rel, dir)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("file %s: %s is not a folder", rel, dir)
		}
	}
	lfi, err := r.Lstat(rel)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", rel, err)
	}
	if lfi.Mode()&fs.ModeSymlink != 0 {
		return nil, fmt.Errorf("file %s is a symbolic link: the file data source follows none", rel)
	}
	if !lfi.Mode().IsRegular() && !lfi.IsDir() {
		return nil, fmt.Errorf("file %s is not a regular file (%s)", rel, lfi.Mode().Type())
	}
	f, err := r.OpenFile(rel, os.O_RDONLY|openNoFollow, 0)
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", rel, err)
	}
	defer f.Close()
	// What was opened is what is checked: a file swapped for a link or
	// another file after the check above cannot slip through.
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", rel, err)
	}
	if !os.SameFile(lfi, fi) {
		return nil, fmt.Errorf("file %s changed while it was opened", rel)
	}
	switch {
	case fi.IsDir():
		return nil, fmt.Errorf("file %s is a folder", rel)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("file %s is not a regular file (%s)", rel, fi.Mode().Type())
	case fi.Size() > MaxDataFileSize:
		return nil, fmt.Errorf("file %s is %d bytes, more than the %d the file data source reads", rel, fi.Size(), MaxDataFileSize)
	}
	if n, ok := linkCount(fi); ok && n > 1 {
		return nil, fmt.Errorf("file %s has %d hard links: one of them may be outside the root, so the file data source reads none", rel, n)
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxDataFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("file %s: %w", rel, err)
	}
	if len(b) > MaxDataFileSize {
		return nil, fmt.Errorf("file %s grew past the %d bytes the file data source reads", rel, MaxDataFileSize)
	}
	return b, nil
}
