package trace

import (
	"strings"
	"testing"
)

// A well-formed document with every kind of event weft writes: metadata,
// nested slices, a complete event inside a slice, instants and a flow
// from one slice to another.
const goodTrace = `{"traceEvents":[
{"name":"process_name","ph":"M","pid":1,"tid":0,"args":{"name":"weft run 1"}},
{"name":"thread_name","ph":"M","pid":1,"tid":0,"args":{"name":"loop 0"}},
{"name":"thread_sort_index","ph":"M","pid":1,"tid":0,"args":{"sort_index":0}},
{"name":"main","cat":"task","ph":"B","ts":0,"pid":1,"tid":0},
{"name":"poll","cat":"poll","ph":"X","ts":1,"dur":0.5,"pid":1,"tid":0},
{"name":"spawn","cat":"flow","ph":"s","id":1,"ts":2,"pid":1,"tid":0},
{"name":"main","cat":"task","ph":"E","ts":2,"pid":1,"tid":0,"args":{"reason":"spawn"}},
{"name":"child","cat":"task","ph":"B","ts":2,"pid":1,"tid":0},
{"name":"spawn","cat":"flow","ph":"f","bp":"e","id":1,"ts":2,"pid":1,"tid":0},
{"name":"name","ph":"i","s":"t","ts":2.5,"pid":1,"tid":0},
{"name":"child","cat":"task","ph":"E","ts":3,"pid":1,"tid":0},
{"name":"timer","cat":"loop","ph":"X","ts":4,"dur":0,"pid":1,"tid":0},
{"name":"work","cat":"offload","ph":"X","ts":1.25,"dur":7,"pid":1,"tid":1000}
],"displayTimeUnit":"ns"}`

func TestValidateAcceptsAWellFormedTrace(t *testing.T) {
	if err := Validate([]byte(goodTrace)); err != nil {
		t.Fatal(err)
	}
	// The bare-array form is part of the format too.
	arr := `[{"name":"a","ph":"X","ts":0,"dur":1,"pid":"p","tid":"t"},{"name":"g","ph":"i","s":"g","ts":3,"pid":1}]`
	if err := Validate([]byte(arr)); err != nil {
		t.Fatal(err)
	}
}

// TestValidateRejectsEachKindOfMistake breaks the format one way at a
// time and checks that Validate names the problem.
func TestValidateRejectsEachKindOfMistake(t *testing.T) {
	ev := func(s ...string) string { return `{"traceEvents":[` + strings.Join(s, ",") + `]}` }
	cases := []struct{ name, doc, want string }{
		{"not JSON", `{"traceEvents":[`, "not JSON"},
		{"no events", `{"events":[]}`, "no traceEvents"},
		{"bad time unit", `{"traceEvents":[],"displayTimeUnit":"s"}`, "displayTimeUnit"},
		{"not an object", ev(`3`), "not an object"},
		{"a key twice", ev(`{"name":"a","ph":"X","ts":0,"dur":1,"pid":1,"tid":1,"args":{"x":1,"x":2}}`), "key \"x\" twice"},
		{"unknown phase", ev(`{"name":"a","ph":"Q","ts":0,"pid":1,"tid":1}`), "unknown phase"},
		{"no name", ev(`{"ph":"X","ts":0,"dur":1,"pid":1,"tid":1}`), "no name"},
		{"no ts", ev(`{"name":"a","ph":"i","pid":1,"tid":1}`), "no numeric ts"},
		{"string ts", ev(`{"name":"a","ph":"i","ts":"0","pid":1,"tid":1}`), "no numeric ts"},
		{"no pid", ev(`{"name":"a","ph":"i","ts":0,"tid":1}`), "no pid"},
		{"no tid", ev(`{"name":"a","ph":"X","ts":0,"dur":1,"pid":1}`), "no tid"},
		{"X without dur", ev(`{"name":"a","ph":"X","ts":0,"pid":1,"tid":1}`), "no numeric dur"},
		{"negative dur", ev(`{"name":"a","ph":"X","ts":5,"dur":-1,"pid":1,"tid":1}`), "negative dur"},
		{"args not an object", ev(`{"name":"a","ph":"X","ts":0,"dur":1,"pid":1,"tid":1,"args":[1]}`), "args is not an object"},
		{"bad instant scope", ev(`{"name":"a","ph":"i","s":"x","ts":0,"pid":1,"tid":1}`), "scope"},
		{"M without args", ev(`{"name":"thread_name","ph":"M","pid":1,"tid":1}`), "no args"},
		{"thread_name without name", ev(`{"name":"thread_name","ph":"M","pid":1,"tid":1,"args":{}}`), "args.name"},
		{"sort index not a number", ev(`{"name":"thread_sort_index","ph":"M","pid":1,"tid":1,"args":{"sort_index":"1"}}`), "sort_index"},
		{"flow without id", ev(`{"name":"a","ph":"X","ts":0,"dur":1,"pid":1,"tid":1}`, `{"name":"f","ph":"s","ts":0,"pid":1,"tid":1}`), "no id"},
		{"bad binding point", ev(`{"name":"a","ph":"X","ts":0,"dur":1,"pid":1,"tid":1}`,
			`{"name":"f","ph":"s","id":1,"ts":0,"pid":1,"tid":1}`, `{"name":"f","ph":"f","bp":"x","id":1,"ts":1,"pid":1,"tid":1}`), "bp"},
		{"tid 0 beside tid = pid", ev(`{"name":"a","ph":"X","ts":0,"dur":1,"pid":3,"tid":0}`, `{"name":"b","ph":"X","ts":0,"dur":1,"pid":3,"tid":3}`), "two tracks become one"},
		{"E without B", ev(`{"name":"a","ph":"E","ts":0,"pid":1,"tid":1}`), "ends no slice"},
		{"B never ended", ev(`{"name":"a","ph":"B","ts":0,"pid":1,"tid":1}`), "never ended"},
		{"E before its B", ev(`{"name":"a","ph":"B","ts":5,"pid":1,"tid":1}`, `{"name":"a","ph":"E","ts":4,"pid":1,"tid":1}`), "ends no slice"},
		{"partial overlap", ev(`{"name":"a","ph":"B","ts":0,"pid":1,"tid":1}`, `{"name":"b","ph":"X","ts":1,"dur":5,"pid":1,"tid":1}`,
			`{"name":"a","ph":"E","ts":3,"pid":1,"tid":1}`), "overlaps"},
		{"flow end without start", ev(`{"name":"a","ph":"X","ts":0,"dur":9,"pid":1,"tid":1}`,
			`{"name":"w","ph":"f","bp":"e","id":7,"ts":1,"pid":1,"tid":1}`), "no start"},
		{"flow end before start", ev(`{"name":"a","ph":"X","ts":0,"dur":9,"pid":1,"tid":1}`,
			`{"name":"w","ph":"s","id":7,"ts":5,"pid":1,"tid":1}`, `{"name":"w","ph":"f","bp":"e","id":7,"ts":2,"pid":1,"tid":1}`), "no start"},
		{"flow started twice", ev(`{"name":"a","ph":"X","ts":0,"dur":9,"pid":1,"tid":1}`,
			`{"name":"w","ph":"s","id":7,"ts":1,"pid":1,"tid":1}`, `{"name":"w","ph":"s","id":7,"ts":2,"pid":1,"tid":1}`), "starts again"},
		{"flow start outside a slice", ev(`{"name":"a","ph":"X","ts":0,"dur":1,"pid":1,"tid":1}`,
			`{"name":"w","ph":"s","id":7,"ts":5,"pid":1,"tid":1}`), "no slice on track"},
		{"flow end with no slice after it", ev(`{"name":"a","ph":"X","ts":0,"dur":1,"pid":1,"tid":1}`,
			`{"name":"w","ph":"s","id":7,"ts":0.5,"pid":1,"tid":1}`, `{"name":"w","ph":"f","id":7,"ts":3,"pid":1,"tid":1}`), "no slice begins"},
	}
	for _, c := range cases {
		err := Validate([]byte(c.doc))
		if err == nil {
			t.Errorf("%s: Validate accepted %s", c.name, c.doc)
			continue
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %q does not mention %q", c.name, err, c.want)
		}
	}
}

// TestValidateBoundsItsReport checks that a document with many problems
// gets a report of bounded size that says how many more there were.
func TestValidateBoundsItsReport(t *testing.T) {
	var evs []string
	for range 50 {
		evs = append(evs, `{"ph":"Q"}`)
	}
	err := Validate([]byte("[" + strings.Join(evs, ",") + "]"))
	if err == nil || strings.Count(err.Error(), "unknown phase") != maxProblems || !strings.Contains(err.Error(), "and 30 more") {
		t.Fatalf("report: %v", err)
	}
}
