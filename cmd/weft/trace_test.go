package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/weft-go/weft/internal/trace"
)

// sampleTrace records a short run of two tasks, "main" and "worker", and
// returns its JSON.
func sampleTrace(t *testing.T) []byte {
	t.Helper()
	var out bytes.Buffer
	r := trace.NewStream(&out)
	b := r.NewBuffer(1, 0)
	const ms = 1_000_000
	b.Spawn(0, 0, 1, 0)
	b.SetName(0, 1, "main")
	b.Resume(0, 1)
	b.Spawn(1*ms, 1, 2, 0)
	b.SetName(1*ms, 2, "worker")
	b.Suspend(1*ms, 1, trace.Spawned)
	b.Resume(1*ms, 2)
	b.Suspend(3*ms, 2, trace.Finished)
	b.Resume(3*ms, 1)
	b.Suspend(4*ms, 1, trace.Finished)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// checkSVG checks that the file at path is well-formed XML with an svg
// root whose text holds each of want.
func checkSVG(t *testing.T, path string, want ...string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(data))
	var text strings.Builder
	root := ""
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			text.Write(tok)
			text.WriteByte('\n')
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q", path, root)
	}
	for _, w := range want {
		if !strings.Contains(text.String(), w) {
			t.Errorf("%s does not say %q", path, w)
		}
	}
}

// TestTraceCommandDrawsTheFile runs `weft trace` with the output named
// after the file and by -o, with the flags before and after the file.
func TestTraceCommandDrawsTheFile(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "run.json")
	if err := os.WriteFile(in, sampleTrace(t), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"trace", in}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	checkSVG(t, filepath.Join(dir, "run.svg"), "run.json", "loop 0", "main", "worker")
	if !strings.Contains(out.String(), "run.svg") || errOut.Len() != 0 {
		t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
	}

	other := filepath.Join(dir, "other.svg")
	if code := run([]string{"trace", "-title", "my run", in, "-o", other}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	checkSVG(t, other, "my run", "main", "worker")
}

// TestTraceCommandFailures checks that a missing file, a file that is not
// a trace and a missing argument fail, leaving no picture behind.
func TestTraceCommandFailures(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"traceEvents": [`), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"trace"}, "want one trace file"},
		{[]string{"trace", "a.json", "b.json"}, "want one trace file"},
		{[]string{"trace", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"trace", bad}, "reading the events"},
		{[]string{"trace", "-nosuchflag", bad}, "not defined"},
	}
	for _, c := range cases {
		var out, errOut bytes.Buffer
		if code := run(c.args, &out, &errOut); code != 1 || !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%q: exit %d, stderr %q, want %q", c.args, code, errOut.String(), c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "bad.svg")); !os.IsNotExist(err) {
		t.Errorf("a picture of a broken trace was left: %v", err)
	}
}

// TestWriteTraceFilesWritesTheTraceAndItsTimeline checks the tour's
// helper: DIR/NAME.json as given, and DIR/NAME.svg drawn from it.
func TestWriteTraceFilesWritesTheTraceAndItsTimeline(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "traces")
	data := sampleTrace(t)
	if err := writeTraceFiles(dir, "fetch", "weft tour: fetch", data); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "fetch.json"))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("fetch.json: %v, same: %v", err, bytes.Equal(got, data))
	}
	checkSVG(t, filepath.Join(dir, "fetch.svg"), "weft tour: fetch", "main", "worker")
}

// TestTourTraceWritesATimelinePerProgram runs two tour programs with
// --trace: each gets a valid trace and an SVG that names its tasks.
func TestTourTraceWritesATimelinePerProgram(t *testing.T) {
	dir := t.TempDir()
	var out, errOut bytes.Buffer
	if code := run([]string{"tour", "--trace", dir, "fetch", "yield"}, &out, &errOut); code != 0 {
		t.Fatalf("weft tour --trace exited %d: %s%s", code, out.String(), errOut.String())
	}
	for _, name := range []string{"fetch", "yield"} {
		data, err := os.ReadFile(filepath.Join(dir, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := trace.Validate(data); err != nil {
			t.Errorf("%s.json is not valid: %v", name, err)
		}
		if !strings.Contains(out.String(), filepath.Join(dir, name+".svg")) {
			t.Errorf("the tour does not say where %s's trace is", name)
		}
	}
	checkSVG(t, filepath.Join(dir, "fetch.svg"), "loop 0", "weft tour: fetch")
}
