package cpubound

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/weft-go/weft/internal/trace"
)

// writeTraceFiles writes -trace's recording (the JSON WithTrace wrote) to
// DIR/NAME.json and its timeline to DIR/NAME.svg, making DIR if need be,
// as `weft tour --trace` does for each program.
func writeTraceFiles(dir, name, title string, data []byte) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	base := filepath.Join(dir, name)
	if err := os.WriteFile(base+".json", data, 0o644); err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	f, err := os.Create(base + ".svg")
	if err != nil {
		return fmt.Errorf("trace: %w", err)
	}
	err = trace.RenderSVG(data, f, trace.SVGOptions{Title: title})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(base + ".svg")
		return fmt.Errorf("trace: %s.svg: %w", base, err)
	}
	return nil
}
