package weft

// The map of the package (DESIGN.md, "The core and the layers"), checked:
// the table there places every file in a family, core or layer, and no
// core file may use a name that only a layer file declares. A layer may
// use the core; the core uses no layer. The test files follow the same
// map: each is named after the source file whose behaviour it tests.

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// family is a row of the map in DESIGN.md, "The core and the layers".
type family struct {
	name  string
	core  bool
	files []string // patterns, as filepath.Match takes them
}

// readMap reads the families from DESIGN.md's table, the one place the
// map is written.
func readMap(t *testing.T) []family {
	t.Helper()
	b, err := os.ReadFile("DESIGN.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "<!-- layout:")
	if i < 0 {
		t.Fatal("DESIGN.md has no layout table (<!-- layout: ... -->)")
	}
	var fams []family
	for _, line := range strings.Split(text[i:], "\n")[1:] {
		if !strings.HasPrefix(line, "|") {
			if len(fams) > 0 {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 || strings.HasPrefix(strings.TrimSpace(cells[0]), "---") || strings.TrimSpace(cells[0]) == "family" {
			continue
		}
		f := family{name: strings.Trim(strings.TrimSpace(cells[0]), "`")}
		switch kind := strings.TrimSpace(cells[1]); kind {
		case "core":
			f.core = true
		case "layer":
		default:
			t.Fatalf("DESIGN.md's layout table: family %s has kind %q (core or layer)", f.name, kind)
		}
		for _, p := range strings.Split(cells[2], ",") {
			p = strings.Trim(strings.TrimSpace(p), "`")
			if _, err := filepath.Match(p, ""); err != nil || p == "" {
				t.Fatalf("DESIGN.md's layout table: bad file pattern %q", p)
			}
			f.files = append(f.files, p)
		}
		fams = append(fams, f)
	}
	if len(fams) == 0 {
		t.Fatal("DESIGN.md's layout table is empty")
	}
	return fams
}

// sourceFiles lists the package's non-test Go files.
func sourceFiles(t *testing.T) []string {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(names, func(n string) bool { return strings.HasSuffix(n, "_test.go") })
}

// place returns the families whose patterns match name.
func place(fams []family, name string) []family {
	var in []family
	for _, f := range fams {
		for _, p := range f.files {
			if ok, _ := filepath.Match(p, name); ok {
				in = append(in, f)
				break
			}
		}
	}
	return in
}

// TestTheMapPlacesEveryFile checks DESIGN.md's map against the listing:
// every source file is in exactly one family, every core pattern names a
// file, and a layer's files carry its prefix (name.go or name_*.go), so
// that a plain name is always the core's.
func TestTheMapPlacesEveryFile(t *testing.T) {
	fams := readMap(t)
	files := sourceFiles(t)
	for _, name := range files {
		switch in := place(fams, name); len(in) {
		case 0:
			t.Errorf("%s is in no family of DESIGN.md's map: give it a layer's prefix or list it in a core row", name)
		case 1:
		default:
			t.Errorf("%s is in %d families of DESIGN.md's map (%s, %s)", name, len(in), in[0].name, in[1].name)
		}
	}
	for _, f := range fams {
		for _, p := range f.files {
			if !f.core && p != f.name+".go" && !strings.HasPrefix(p, f.name+"_") {
				t.Errorf("layer %s: pattern %q does not carry the layer's prefix %s_", f.name, p, f.name)
			}
			if f.core && !slices.ContainsFunc(files, func(n string) bool { ok, _ := filepath.Match(p, n); return ok }) {
				t.Errorf("core family %s: %q names no file", f.name, p)
			}
		}
		if f.core {
			continue
		}
		for _, g := range fams {
			for _, p := range g.files {
				if g.core && (p == f.name+".go" || strings.HasPrefix(p, f.name+"_")) {
					t.Errorf("core file pattern %q carries layer %s's prefix", p, f.name)
				}
			}
		}
	}
}

// TestTheCoreUsesNoLayer parses the package and fails if a core file
// refers to a package-level name (function, type, variable, constant), or
// selects a method or field, that only layer files declare.
func TestTheCoreUsesNoLayer(t *testing.T) {
	fams := readMap(t)
	isCoreFile := func(name string) bool {
		in := place(fams, name)
		return len(in) == 1 && in[0].core
	}
	names := sourceFiles(t)
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	// For each name, in which kind of file it is declared: [core, layer].
	topLevel := map[string]*[2]bool{}
	members := map[string]*[2]bool{} // methods and struct fields
	note := func(m map[string]*[2]bool, name string, core bool) {
		if m[name] == nil {
			m[name] = &[2]bool{}
		}
		if core {
			m[name][0] = true
		} else {
			m[name][1] = true
		}
	}
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
		core := isCoreFile(name)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil {
					note(members, d.Name.Name, core)
				} else {
					note(topLevel, d.Name.Name, core)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						note(topLevel, s.Name.Name, core)
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									note(members, n.Name, core)
								}
							}
						}
						if it, ok := s.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								for _, n := range m.Names {
									note(members, n.Name, core)
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							note(topLevel, n.Name, core)
						}
					}
				}
			}
		}
	}
	layerOnly := func(m map[string]*[2]bool, name string) bool {
		d := m[name]
		return d != nil && d[1] && !d[0]
	}
	for name, f := range files {
		if !isCoreFile(name) {
			continue
		}
		sels := map[*ast.Ident]bool{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				sels[n.Sel] = true
				// Only unexported members: an exported name may be a method
				// of another package's type (poller.Read, Coro.Close).
				if !ast.IsExported(n.Sel.Name) && layerOnly(members, n.Sel.Name) {
					t.Errorf("%s: the core selects %s, which only a layer declares", fset.Position(n.Sel.Pos()), n.Sel.Name)
				}
			case *ast.Ident:
				// Obj == nil: not declared in this file, so a package-level
				// name of another file (or a predeclared one).
				if !sels[n] && n.Obj == nil && layerOnly(topLevel, n.Name) {
					t.Errorf("%s: the core uses %s, which a layer declares", fset.Position(n.Pos()), n.Name)
				}
			}
			return true
		})
	}
}

// The operating systems and architectures a file name's suffix may name
// (Go's list: go tool dist list, and the names Go reserves).
var (
	knownOS = strings.Fields("aix android darwin dragonfly freebsd hurd illumos ios js linux nacl netbsd openbsd plan9 solaris wasip1 windows zos")

	knownArch = strings.Fields("386 amd64 amd64p32 arm armbe arm64 arm64be loong64 mips mipsle mips64 mips64le mips64p32 mips64p32le ppc ppc64 ppc64le riscv riscv64 s390 s390x sparc sparc64 wasm")
)

// trimSystem removes from a file's stem the suffixes that Go reads as a
// build constraint (_GOOS, _GOARCH, _GOOS_GOARCH).
func trimSystem(stem string) string {
	parts := strings.Split(stem, "_")
	n := len(parts)
	if n > 2 && slices.Contains(knownOS, parts[n-2]) && slices.Contains(knownArch, parts[n-1]) {
		return strings.Join(parts[:n-2], "_")
	}
	if n > 1 && (slices.Contains(knownOS, parts[n-1]) || slices.Contains(knownArch, parts[n-1])) {
		return strings.Join(parts[:n-1], "_")
	}
	return stem
}

// fileHeader returns a Go file's package name and its //go:build
// expression ("" without one).
func fileHeader(t *testing.T, name string) (pkg, build string) {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	for sc := bufio.NewScanner(bytes.NewReader(b)); sc.Scan(); {
		line := strings.TrimSpace(sc.Text())
		if constraint.IsGoBuild(line) {
			if _, err := constraint.Parse(line); err != nil {
				t.Errorf("%s: %v", name, err)
			}
			build = strings.TrimSpace(strings.TrimPrefix(line, "//go:build"))
		}
		if rest, ok := strings.CutPrefix(line, "package "); ok {
			return strings.TrimSpace(rest), build
		}
	}
	t.Fatalf("%s has no package clause", name)
	return "", ""
}

// TestEveryTestFileIsNamedAfterWhatItTests checks the test files against
// the map: a test file's stem (its name without _test.go, then without a
// _GOOS/_GOARCH suffix, then without _internal) names a source file (its
// stem, or its stem without a _GOOS/_GOARCH, _unix or _other suffix), so
// that a feature's tests are found beside its source. A file whose stem
// ends in _unix or _other, as the source's do (loops_unix_test.go beside
// loops_test.go), carries a //go:build line saying so. The other names are the package's own: helpers (the
// helpers that several features' tests use) and its variants for one
// build (helpers_unix, helpers_race..., each with a //go:build line),
// export and export_<family or source> (what the internal package
// exports to the external tests), main (TestMain), layout (this file),
// example and example_<family or source>. A file of package weft, the
// internal tests, is named _internal_test.go (export and layout are
// internal too, by their names); the others are package weft_test.
func TestEveryTestFileIsNamedAfterWhatItTests(t *testing.T) {
	fams := readMap(t)
	stems := map[string]bool{}
	for _, name := range sourceFiles(t) {
		stem := strings.TrimSuffix(name, ".go")
		stems[stem] = true
		base := trimSystem(stem)
		for _, suffix := range []string{"_unix", "_other"} {
			base = strings.TrimSuffix(base, suffix)
		}
		stems[base] = true
	}
	// A family or a source file: what example_X and export_X may name.
	known := func(s string) bool {
		return stems[s] || slices.ContainsFunc(fams, func(f family) bool { return f.name == s })
	}
	tests, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if len(tests) == 0 {
		t.Fatal("no test files")
	}
	for _, name := range tests {
		pkg, build := fileHeader(t, name)
		stem := trimSystem(strings.TrimSuffix(name, "_test.go"))
		internal := false
		if s, ok := strings.CutSuffix(stem, "_internal"); ok {
			stem, internal = s, true
		}
		for _, suffix := range []string{"_unix", "_other"} {
			if strings.HasSuffix(stem, suffix) && (build == "" || suffix == "_unix" && !strings.Contains(build, "unix")) {
				t.Errorf("%s: a %s file carries a //go:build line that says so (it has %q)", name, suffix, build)
			}
		}
		ok := false
		switch {
		case stem == "helpers", stem == "main", stem == "layout", stem == "export", stem == "example":
			ok = true
		case strings.HasPrefix(stem, "helpers_"):
			ok = build != ""
			if !ok {
				t.Errorf("%s: a helpers file for one build has a //go:build line that says which", name)
				continue
			}
		case strings.HasPrefix(stem, "example_"):
			ok = known(strings.TrimPrefix(stem, "example_"))
		case strings.HasPrefix(stem, "export_"):
			ok = known(strings.TrimPrefix(stem, "export_"))
		case stems[stem]:
			ok = true
		default:
			for _, suffix := range []string{"_unix", "_other"} {
				if s, cut := strings.CutSuffix(stem, suffix); cut && stems[s] {
					ok = true
				}
			}
		}
		if !ok {
			t.Errorf("%s names no source file, family or helper file: a feature's tests go in the _test.go named after its source file (DESIGN.md, \"The core and the layers\")", name)
		}
		wantInternal := internal || stem == "export" || strings.HasPrefix(stem, "export_") || stem == "layout"
		switch {
		case wantInternal && pkg != "weft":
			t.Errorf("%s is package %s: internal tests (package weft) are the _internal_test.go files", name, pkg)
		case !wantInternal && pkg != "weft_test":
			t.Errorf("%s is package %s: a test of package weft is named <file>_internal_test.go", name, pkg)
		}
	}
}
