// Command structure measures the repository's shape (imports up the
// layers, lifecycle scaffolding, size, exported names and spellings), so
// that every change can be checked against a saved baseline.
//
//	GOWORK=off go -C internal/tools run ./structure -root ../..
//	GOWORK=off go -C internal/tools run ./structure -root ../.. -json > docs/structure-baseline.json
//	GOWORK=off go -C internal/tools run ./structure -root ../.. -baseline ../../docs/structure-baseline.json
//
// (make structure runs the first.) It reports five sections: imports that
// run back up the layer order (-layers), the lifecycle scaffolding in
// recipes/, size, exported names per package, and duplicated spellings.
// docs/layout.md says what each number means.
//
// The library is the root module's packages (go list ./... there, with
// GOWORK=off so that the workspace's other modules stay out); the import
// check also covers the other modules named by -modules. Every non-test
// .go file of a package counts, whatever its build constraints, so that
// the numbers are the same on every platform and with or without -race.
// The counts are syntactic: nothing is type-checked.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

const defaultLayers = "zkserver,.,retry,conn,internal,framework,hold,engine,recipes,integration,cmd"

type config struct {
	root     string
	modules  []string // module directories relative to root; the first is the library
	layers   []string // top-level folders, bottom to top
	maxFile  int
	maxFunc  int
	asJSON   bool
	baseline string
}

func main() {
	var cfg config
	var modules, layers string
	flag.StringVar(&cfg.root, "root", ".", "the repository's root directory")
	flag.StringVar(&modules, "modules", ".,cmd/zkr", "module directories whose imports are checked; the first is the library, the only one measured otherwise")
	flag.StringVar(&layers, "layers", defaultLayers, "top-level folders from the bottom layer to the top (\".\" is the root package)")
	flag.IntVar(&cfg.maxFile, "max-file", 600, "a file longer than this many lines is listed")
	flag.IntVar(&cfg.maxFunc, "max-func", 60, "a function longer than this many lines is listed")
	flag.BoolVar(&cfg.asJSON, "json", false, "print the numbers as JSON instead of the report")
	flag.StringVar(&cfg.baseline, "baseline", "", "a saved -json output: after the report, list every number that differs from it")
	flag.Parse()
	cfg.modules = splitList(modules)
	cfg.layers = splitList(layers)
	if len(cfg.modules) == 0 {
		fatal(errors.New("-modules names no module"))
	}

	repo, err := load(cfg.root, cfg.modules)
	if err != nil {
		fatal(err)
	}
	r := measure(repo, cfg)
	if cfg.asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false) // edges read "a -> b", not "a -\u003e b"
		if err := enc.Encode(r); err != nil {
			fatal(err)
		}
		return
	}
	writeReport(os.Stdout, r)
	if cfg.baseline != "" {
		if err := writeDiff(os.Stdout, cfg.baseline, r); err != nil {
			fatal(err)
		}
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "structure:", err)
	os.Exit(1)
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// repo is what load found: the packages of every module, parsed.
type repo struct {
	modPath string // the root module's path: imports under it are the repository's
	fset    *token.FileSet
	pkgs    []*pkg
}

type pkg struct {
	path    string // import path
	rel     string // directory relative to the root, "." for the root package
	name    string
	library bool // in the root module
	files   []*file
	imports []string // the repository's packages it imports, as rel paths, sorted
}

type file struct {
	rel   string
	lines int
	ast   *ast.File
}

// layer is the top-level folder a package is in.
func layer(rel string) string {
	top, _, _ := strings.Cut(rel, "/")
	return top
}

type listed struct {
	ImportPath     string
	Name           string
	Dir            string
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string
	Error          *struct{ Err string }
}

func load(root string, modules []string) (*repo, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	modPath, err := goCmd(root, "list", "-m", "-f", "{{.Path}}")
	if err != nil {
		return nil, err
	}
	r := &repo{modPath: strings.TrimSpace(string(modPath)), fset: token.NewFileSet()}
	for i, m := range modules {
		out, err := goCmd(filepath.Join(root, m), "list", "-e",
			"-json=ImportPath,Name,Dir,GoFiles,CgoFiles,IgnoredGoFiles,Error", "./...")
		if err != nil {
			return nil, err
		}
		dec := json.NewDecoder(bytes.NewReader(out))
		for {
			var l listed
			if err := dec.Decode(&l); err == io.EOF {
				break
			} else if err != nil {
				return nil, fmt.Errorf("go list in %s: %v", m, err)
			}
			p, err := r.parse(root, l, i == 0)
			if err != nil {
				return nil, err
			}
			if p != nil {
				r.pkgs = append(r.pkgs, p)
			}
		}
	}
	slices.SortFunc(r.pkgs, func(a, b *pkg) int { return strings.Compare(a.rel, b.rel) })
	return r, nil
}

func (r *repo) parse(root string, l listed, library bool) (*pkg, error) {
	rel, err := filepath.Rel(root, l.Dir)
	if err != nil {
		return nil, err
	}
	p := &pkg{path: l.ImportPath, rel: filepath.ToSlash(rel), name: l.Name, library: library}
	var names []string
	for _, n := range slices.Concat(l.GoFiles, l.CgoFiles, l.IgnoredGoFiles) {
		if !strings.HasSuffix(n, "_test.go") {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		if l.Error != nil {
			fmt.Fprintf(os.Stderr, "structure: skipped %s: %s\n", l.ImportPath, l.Error.Err)
		}
		return nil, nil
	}
	slices.Sort(names)
	imports := map[string]bool{}
	for _, n := range names {
		src, err := os.ReadFile(filepath.Join(l.Dir, n))
		if err != nil {
			return nil, err
		}
		f, err := parser.ParseFile(r.fset, filepath.Join(p.rel, n), src, parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		lines := bytes.Count(src, []byte("\n"))
		if len(src) > 0 && src[len(src)-1] != '\n' {
			lines++
		}
		p.files = append(p.files, &file{rel: path(p.rel, n), lines: lines, ast: f})
		for _, s := range f.Imports {
			ip := strings.Trim(s.Path.Value, "`\"")
			if ip == r.modPath {
				imports["."] = true
			} else if rest, ok := strings.CutPrefix(ip, r.modPath+"/"); ok {
				imports[rest] = true
			}
		}
	}
	for ip := range imports {
		p.imports = append(p.imports, ip)
	}
	slices.Sort(p.imports)
	return p, nil
}

func path(dir, name string) string {
	if dir == "." {
		return name
	}
	return dir + "/" + name
}

// goCmd runs go in dir with the workspace off: each module is listed as
// itself, and cmd/zkr finds the library through its replace directive.
func goCmd(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return out, nil
}
