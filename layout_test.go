package weft

// The line between the core and its layers (DESIGN.md, "The core and the
// layers"), checked: no core file may use a name that only a layer file
// declares. A layer may use the core; the core uses no layer.

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// coreFiles are the core's files: tasks, promises, the loop and its run
// queue, the wake path, timers, the poller's use, cancellation and the
// structured-concurrency combinators. Every other non-test file of the
// package belongs to a layer (net, pipes, offload, sync).
var coreFiles = []string{
	"backend.go", "procs.go", "handover.go", "callsite_*.go", "cancel.go", "combine.go", "context.go", "deadlock.go",
	"doc.go", "errors.go", "external.go", "fd.go", "fd_*.go", "finish.go", "first.go", "group.go",
	"labels.go", "labels_task.go", "loop.go", "observe.go", "obs_dump.go", "obs_watchdog.go", "trace.go", "park.go", "promise.go", "queue.go",
	"run.go", "loops.go", "sched.go", "task.go",
	"timers.go", "unobserved.go", "owner*.go", "envloops_*.go",
	"seed_network.go", "seed.go", // simulation
}

func isCoreFile(name string) bool {
	for _, pat := range coreFiles {
		if ok, _ := filepath.Match(pat, name); ok {
			return true
		}
	}
	return false
}

// TestTheCoreUsesNoLayer parses the package and fails if a core file
// refers to a package-level name (function, type, variable, constant), or
// selects a method or field, that only layer files declare.
func TestTheCoreUsesNoLayer(t *testing.T) {
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
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
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
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
