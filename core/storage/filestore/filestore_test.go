package filestore_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bulwark-iac/bulwark/core/storage"
	"github.com/bulwark-iac/bulwark/core/storage/filestore"
	"github.com/bulwark-iac/bulwark/core/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, storagetest.Factory{
		New: func(t *testing.T) string { return "file://" + t.TempDir() },
		Open: func(ctx context.Context, home string, o storage.Options) (storage.Backend, error) {
			return filestore.Open(ctx, home, o)
		},
		CopyState: func(t *testing.T, from, to string) {
			b, err := os.ReadFile(filepath.Join(dir(from), "state.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir(to), "state.json"), b, 0o600); err != nil {
				t.Fatal(err)
			}
		},
		Raw: func(t *testing.T, home string) []byte {
			var all []byte
			filepath.WalkDir(dir(home), func(p string, d os.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					b, _ := os.ReadFile(p)
					all = append(all, b...)
				}
				return nil
			})
			return all
		},
	})
}

func dir(home string) string {
	return filepath.Join(strings.TrimPrefix(home, "file://"), storagetest.Stack)
}
