//go:build unix

package weft_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/weft-go/weft"
)

func TestFilesGoThroughOffload(t *testing.T) {
	dir := t.TempDir()
	run(t, func(wt *weft.Task) {
		if _, err := weft.ReadFile(wt, filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("ReadFile(missing) = %v", err)
		}
		name := filepath.Join(dir, "f")
		if err := weft.WriteFile(wt, name, []byte("contents"), 0o600); err != nil {
			t.Fatal(err)
		}
		if b, err := weft.ReadFile(wt, name); err != nil || string(b) != "contents" {
			t.Fatalf("ReadFile = %q, %v", b, err)
		}
		if err := weft.WriteFile(wt, filepath.Join(dir, "no", "such", "dir"), nil, 0o600); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("WriteFile into a missing directory = %v", err)
		}
	})
}
