package tfinstall_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/bulwark-iac/bulwark/core/tfinstall"
)

// BenchmarkCopyVerified measures what a run pays before a locked provider
// starts: copying and hashing a package of the size of a large real
// provider's executable (the AWS provider's is about 600 MB; most are
// 20-60 MB).
func BenchmarkCopyVerified(b *testing.B) {
	for _, mb := range []int{32, 256} {
		b.Run(fmt.Sprintf("%dMB", mb), func(b *testing.B) {
			dir := b.TempDir()
			exe := "terraform-provider-big_v1.0.0"
			data := make([]byte, mb<<20)
			rand.Read(data)
			if err := os.WriteFile(filepath.Join(dir, exe), data, 0o755); err != nil {
				b.Fatal(err)
			}
			src, _ := tfinstall.ParseSource("acme/big")
			p := &tfinstall.Package{Source: src, Version: "1.0.0", Dir: dir, Files: []string{exe}, Exe: exe}
			h, err := p.Hash()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(data)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				dst := filepath.Join(b.TempDir(), "run")
				if _, err := tfinstall.CopyVerified(p, dst, []tfinstall.Hash{h}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
