package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// report is the -json output. Lists come with their counts so that a diff
// of two runs' numbers (-baseline) says what moved, and the lists say where.
type report struct {
	Imports   imports   `json:"imports"`
	Lifecycle lifecycle `json:"lifecycle"`
	Size      size      `json:"size"`
	Exported  exported  `json:"exported"`
	Spellings spellings `json:"spellings"`
}

type imports struct {
	Layers                []string `json:"layers"`
	Edges                 int      `json:"edges"`
	Upward                int      `json:"upward"`
	UpwardEdges           []string `json:"upward_edges"`
	Unranked              int      `json:"unranked"`
	UnrankedEdges         []string `json:"unranked_edges"`
	RecipesToInternal     int      `json:"recipes_to_internal"`
	RecipesToInternalList []string `json:"recipes_to_internal_edges"`
	InternalToUpper       int      `json:"internal_to_upper"`
	InternalToUpperList   []string `json:"internal_to_upper_edges"`
	ZkrToInternal         int      `json:"zkr_to_internal"`
	ZkrToInternalList     []string `json:"zkr_to_internal_edges"`
}

type lifecycle struct {
	UsableDefs        int            `json:"usable_defs"`
	UsableCalls       int            `json:"usable_calls"`
	StartMethods      int            `json:"start_methods"`
	CloseMethods      int            `json:"close_methods"`
	GoStmtsRecipes    int            `json:"go_stmts_recipes"`
	GoStmtsLibrary    int            `json:"go_stmts_library"`
	GoStmtsPerFile    map[string]int `json:"go_stmts_recipes_per_file"`
	GoStmtsPerLayer   map[string]int `json:"go_stmts_per_layer"`
	GoCallsRecipes    int            `json:"go_method_calls_recipes"`
	GoCallsLibrary    int            `json:"go_method_calls_library"`
	BackoffRecipes    int            `json:"backoff_funcs_recipes"`
	BackoffLibrary    int            `json:"backoff_funcs_library"`
	BackoffFuncs      []string       `json:"backoff_funcs"`
	RetryDoRecipes    int            `json:"retry_do_recipes"`
	RetryDoLibrary    int            `json:"retry_do_library"`
	UsableCallsByFile map[string]int `json:"usable_calls_per_file"`
}

type size struct {
	MaxFile    int            `json:"max_file_lines"`
	MaxFunc    int            `json:"max_func_lines"`
	Files      int            `json:"files"`
	Lines      int            `json:"lines"`
	BigFiles   int            `json:"files_over_max"`
	BigFileMap map[string]int `json:"big_files"`
	LongFuncs  int            `json:"funcs_over_max"`
	LongFunc   map[string]int `json:"long_funcs"`
}

type exported struct {
	Total      int            `json:"total"`
	Public     int            `json:"public"`
	PerPackage map[string]int `json:"per_package"`
}

type spellings struct {
	OptionsFiles    int            `json:"options_files"`
	OptionsLines    int            `json:"options_lines"`
	OptionsPerFile  map[string]int `json:"options_files_lines"`
	WithParticipant int            `json:"with_participant_id"`
	WithPartDefs    []string       `json:"with_participant_id_defs"`
}

func measure(r *repo, cfg config) *report {
	rep := &report{}
	rep.Imports = measureImports(r, cfg.layers)
	rep.Lifecycle = lifecycle{GoStmtsPerFile: map[string]int{}, GoStmtsPerLayer: map[string]int{}, UsableCallsByFile: map[string]int{}, BackoffFuncs: []string{}}
	rep.Size = size{MaxFile: cfg.maxFile, MaxFunc: cfg.maxFunc, BigFileMap: map[string]int{}, LongFunc: map[string]int{}}
	rep.Exported = exported{PerPackage: map[string]int{}}
	rep.Spellings = spellings{OptionsPerFile: map[string]int{}, WithPartDefs: []string{}}
	for _, p := range r.pkgs {
		if !p.library {
			continue
		}
		n := exportedNames(p)
		rep.Exported.PerPackage[p.rel] = n
		rep.Exported.Total += n
		if p.name != "main" && layer(p.rel) != "internal" {
			rep.Exported.Public += n
		}
		for _, f := range p.files {
			inRecipes := layer(p.rel) == "recipes"
			measureFile(r, p, f, inRecipes, rep)
		}
	}
	return rep
}

func measureImports(r *repo, layers []string) imports {
	// Empty lists, not nulls: a baseline reads the same however it began.
	im := imports{Layers: layers, UpwardEdges: []string{}, UnrankedEdges: []string{},
		RecipesToInternalList: []string{}, InternalToUpperList: []string{}, ZkrToInternalList: []string{}}
	rank := map[string]int{}
	for i, l := range layers {
		rank[l] = i
	}
	for _, p := range r.pkgs {
		for _, to := range p.imports {
			im.Edges++
			edge := p.rel + " -> " + to
			from, into := layer(p.rel), layer(to)
			rf, okf := rank[from]
			rt, okt := rank[into]
			switch {
			case !okf || !okt:
				im.UnrankedEdges = append(im.UnrankedEdges, edge)
			case rt > rf:
				im.UpwardEdges = append(im.UpwardEdges, edge)
			}
			toInternal := into == "internal"
			switch {
			case from == "recipes" && toInternal:
				im.RecipesToInternalList = append(im.RecipesToInternalList, edge)
			case from == "internal" && (into == "hold" || into == "recipes" || into == "integration"):
				im.InternalToUpperList = append(im.InternalToUpperList, edge)
			case (p.rel == "cmd/zkr" || strings.HasPrefix(p.rel, "cmd/zkr/")) && toInternal:
				im.ZkrToInternalList = append(im.ZkrToInternalList, edge)
			}
		}
	}
	im.Upward = len(im.UpwardEdges)
	im.Unranked = len(im.UnrankedEdges)
	im.RecipesToInternal = len(im.RecipesToInternalList)
	im.InternalToUpper = len(im.InternalToUpperList)
	im.ZkrToInternal = len(im.ZkrToInternalList)
	return im
}

func measureFile(r *repo, p *pkg, f *file, inRecipes bool, rep *report) {
	lc, sz, sp := &rep.Lifecycle, &rep.Size, &rep.Spellings
	sz.Files++
	sz.Lines += f.lines
	if f.lines > sz.MaxFile {
		sz.BigFileMap[f.rel] = f.lines
		sz.BigFiles++
	}
	if base(f.rel) == "options.go" {
		sp.OptionsFiles++
		sp.OptionsLines += f.lines
		sp.OptionsPerFile[f.rel] = f.lines
	}

	// The name this file gives the retry package, if it imports it; in
	// package retry itself a call of Do is the loop's own business.
	retryName := ""
	for _, s := range f.ast.Imports {
		if ip, _ := strconv.Unquote(s.Path.Value); ip == r.modPath+"/retry" {
			retryName = "retry"
			if s.Name != nil {
				retryName = s.Name.Name
			}
		}
	}

	count := func(n *int, lib *int) {
		if inRecipes {
			*n++
		}
		if lib != nil {
			*lib++
		}
	}
	ast.Inspect(f.ast, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			count(&lc.GoStmtsRecipes, &lc.GoStmtsLibrary)
			lc.GoStmtsPerLayer[layer(p.rel)]++
			if inRecipes {
				lc.GoStmtsPerFile[f.rel]++
			}
		case *ast.CallExpr:
			switch fn := ast.Unparen(n.Fun).(type) {
			case *ast.Ident:
				if fn.Name == "usable" && inRecipes {
					lc.UsableCalls++
					lc.UsableCallsByFile[f.rel]++
				}
			case *ast.SelectorExpr:
				switch fn.Sel.Name {
				case "usable":
					if inRecipes {
						lc.UsableCalls++
						lc.UsableCallsByFile[f.rel]++
					}
				case "Go":
					count(&lc.GoCallsRecipes, &lc.GoCallsLibrary)
				case "Do":
					if x, ok := fn.X.(*ast.Ident); ok && retryName != "" && x.Name == retryName {
						count(&lc.RetryDoRecipes, &lc.RetryDoLibrary)
					}
				}
			}
		}
		return true
	})

	for _, d := range f.ast.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		name := funcName(fd)
		start := r.fset.Position(fd.Pos()).Line
		end := r.fset.Position(fd.End()).Line
		if lines := end - start + 1; lines > sz.MaxFunc {
			sz.LongFunc[f.rel+":"+name] = lines
			sz.LongFuncs++
		}
		if fd.Name.Name == "WithParticipantID" {
			sp.WithParticipant++
			sp.WithPartDefs = append(sp.WithPartDefs, f.rel+":"+name)
		}
		if fd.Body == nil {
			continue
		}
		if inRecipes {
			switch {
			case fd.Name.Name == "usable":
				lc.UsableDefs++
			case fd.Recv != nil && fd.Name.Name == "Start":
				lc.StartMethods++
			case fd.Recv != nil && fd.Name.Name == "Close":
				lc.CloseMethods++
			}
		}
		if backoff(fd.Body) {
			count(&lc.BackoffRecipes, &lc.BackoffLibrary)
			lc.BackoffFuncs = append(lc.BackoffFuncs, f.rel+":"+name)
		}
	}
}

func base(rel string) string {
	return rel[strings.LastIndex(rel, "/")+1:]
}

// funcName is Recv.Method for a method, the name for a function.
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	return recvType(fd.Recv.List[0].Type) + "." + fd.Name.Name
}

func recvType(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvType(t.X)
	case *ast.ParenExpr:
		return recvType(t.X)
	case *ast.IndexExpr:
		return recvType(t.X)
	case *ast.IndexListExpr:
		return recvType(t.X)
	case *ast.Ident:
		return t.Name
	}
	return "?"
}

// backoff is a heuristic for a hand-written backoff: a function in which
// a variable is multiplied or shifted by itself (d *= 2, d <<= 1,
// d = d * 2, d = min(2*d, max), d = time.Duration(float64(d) * 1.5)). The
// doubling need not sit in a loop: a pause type's next() is as much a
// backoff as the loop calling it. Without types it cannot tell a
// time.Duration from any other number (a hash's x *= prime), so the
// function must also name the time package.
func backoff(body *ast.BlockStmt) bool {
	if !mentionsTime(body) {
		return false
	}
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if as, ok := n.(*ast.AssignStmt); ok && grows(as) {
			found = true
		}
		return !found
	})
	return found
}

func mentionsTime(body *ast.BlockStmt) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if s, ok := n.(*ast.SelectorExpr); ok {
			if x, ok := s.X.(*ast.Ident); ok && x.Name == "time" {
				found = true
			}
		}
		return !found
	})
	return found
}

func grows(as *ast.AssignStmt) bool {
	if len(as.Lhs) != 1 || len(as.Rhs) != 1 {
		return false
	}
	switch as.Tok {
	case token.MUL_ASSIGN, token.SHL_ASSIGN:
		return true
	case token.ASSIGN:
	default:
		return false
	}
	lhs := exprString(as.Lhs[0])
	found := false
	ast.Inspect(as.Rhs[0], func(n ast.Node) bool {
		b, ok := n.(*ast.BinaryExpr)
		if ok && (b.Op == token.MUL || b.Op == token.SHL) &&
			(exprString(stripConv(b.X)) == lhs || exprString(stripConv(b.Y)) == lhs) {
			found = true
		}
		return !found
	})
	return found
}

// stripConv takes float64(d) and time.Duration(d) to d (and min(d) too,
// which is harmless here).
func stripConv(e ast.Expr) ast.Expr {
	for {
		switch t := e.(type) {
		case *ast.ParenExpr:
			e = t.X
		case *ast.CallExpr:
			if len(t.Args) != 1 {
				return e
			}
			e = t.Args[0]
		default:
			return e
		}
	}
}

func exprString(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		return exprString(t.X) + "." + t.Sel.Name
	case *ast.StarExpr:
		return "*" + exprString(t.X)
	}
	return fmt.Sprintf("<%T>", e)
}

// exportedNames counts a package's exported top-level identifiers and the
// exported methods declared on its exported types, each name once: files
// for different platforms or tags (race.go, norace.go) declare the same
// names. Struct fields and interface methods are not counted.
func exportedNames(p *pkg) int {
	names := map[string]bool{}
	for _, f := range p.files {
		for _, d := range f.ast.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names[d.Name.Name] = true
				} else if t := recvType(d.Recv.List[0].Type); ast.IsExported(t) {
					names[t+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if s.Name.IsExported() {
							names[s.Name.Name] = true
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names[n.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return len(names)
}

func sortedKeys(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }
