package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A module small enough to count by hand: one upward import (internal/eng
// imports hold), one recipe importing internal/, one go statement and one
// function of 62 lines in a recipe, and a test file whose go statement and
// long function must not count.
func fakeModule(t *testing.T) string {
	dir := t.TempDir()
	long := "func Long() {\n" + strings.Repeat("\t_ = 1\n", 60) + "}\n"
	files := map[string]string{
		"go.mod":                    "module example.com/fake\n\ngo 1.24\n",
		"fake.go":                   "package fake\n",
		"hold/hold.go":              "package hold\n\ntype Hold struct{}\n\nfunc (Hold) Err() error { return nil }\n\nfunc (Hold) done() {}\n",
		"internal/eng/eng.go":       "package eng\n\nimport _ \"example.com/fake/hold\"\n",
		"recipes/lock/options.go":   "package lock\n\nfunc WithParticipantID(string) {}\n",
		"recipes/lock/lock.go":      "package lock\n\nimport _ \"example.com/fake/internal/eng\"\n\ntype L struct{}\n\nfunc (l *L) usable() error { return nil }\n\nfunc (l *L) Close() error {\n\tgo func() {}()\n\treturn l.usable()\n}\n\n" + long,
		"recipes/lock/lock_test.go": "package lock\n\nfunc helper() { go func() {}() }\n\n" + strings.Replace(long, "Long", "LongTest", 1),
	}
	for name, src := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestMeasure(t *testing.T) {
	r, err := load(fakeModule(t), []string{"."})
	if err != nil {
		t.Fatal(err)
	}
	rep := measure(r, config{layers: splitList(defaultLayers), maxFile: 600, maxFunc: 60})

	if want := []string{"internal/eng -> hold"}; !slices.Equal(rep.Imports.UpwardEdges, want) {
		t.Errorf("upward edges %q, want %q", rep.Imports.UpwardEdges, want)
	}
	if rep.Imports.InternalToUpper != 1 || rep.Imports.RecipesToInternal != 1 {
		t.Errorf("internal to upper %d, recipes to internal %d, want 1 and 1",
			rep.Imports.InternalToUpper, rep.Imports.RecipesToInternal)
	}
	lc := rep.Lifecycle
	if lc.GoStmtsRecipes != 1 || lc.GoStmtsLibrary != 1 {
		t.Errorf("go statements %d in recipes, %d in all, want 1 and 1", lc.GoStmtsRecipes, lc.GoStmtsLibrary)
	}
	if lc.UsableDefs != 1 || lc.UsableCalls != 1 || lc.CloseMethods != 1 {
		t.Errorf("usable %d defined, %d called, %d Close, want 1 each", lc.UsableDefs, lc.UsableCalls, lc.CloseMethods)
	}
	if got := rep.Size.LongFunc; len(got) != 1 || got["recipes/lock/lock.go:Long"] != 62 {
		t.Errorf("long functions %v, want recipes/lock/lock.go:Long of 62 lines", got)
	}
	if rep.Spellings.OptionsFiles != 1 || rep.Spellings.WithParticipant != 1 {
		t.Errorf("options.go %d, WithParticipantID %d, want 1 and 1", rep.Spellings.OptionsFiles, rep.Spellings.WithParticipant)
	}
	// Hold and Hold.Err; the unexported method is not counted.
	if got := rep.Exported.PerPackage["hold"]; got != 2 {
		t.Errorf("hold exports %d names, want 2", got)
	}
}

func TestBackoff(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{"for { time.Sleep(d); d *= 2 }", true},
		{"p.d = min(max(2*p.d, 20*time.Millisecond), time.Second)", true},
		{"*pause = min(2**pause, time.Second)", true},
		{"d = time.Duration(float64(d) * 1.5); _ = time.Now", true},
		{"x *= 0xbf58476d1ce4e5b9", false}, // a hash: no time in sight
		{"d = 2 * e; _ = time.Now", false},
	} {
		f, err := parser.ParseFile(token.NewFileSet(), "x.go", "package x\nfunc f() {"+c.body+"}", 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := backoff(f.Decls[0].(*ast.FuncDecl).Body); got != c.want {
			t.Errorf("backoff(%s) = %v, want %v", c.body, got, c.want)
		}
	}
}
