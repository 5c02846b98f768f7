package nsystest

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ReadCorpus reads the seed corpus of a fuzz target kept at the repository root
// (testdata/fuzz/<target>, given as dir), in the "go test fuzz v1" file format that
// `go test -fuzz` writes, and returns each file's values in order, for f.Add. The go
// command reads only the package's own testdata/fuzz, so targets whose corpus lives at the
// root load it with this. A missing directory is an empty corpus; a malformed file fails
// the test.
func ReadCorpus(tb testing.TB, dir string) [][]any {
	tb.Helper()
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		tb.Fatalf("nsystest: %v", err)
	}
	var out [][]any
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		file := filepath.Join(dir, e.Name())
		data, err := os.ReadFile(file)
		if err != nil {
			tb.Fatalf("nsystest: %v", err)
		}
		vals, err := parseCorpusFile(string(data))
		if err != nil {
			tb.Fatalf("nsystest: %s: %v", file, err)
		}
		out = append(out, vals)
	}
	return out
}

// parseCorpusFile decodes one corpus file: the header line, then one value per line
// written as a Go conversion of a literal, such as []byte("..."), string("..."),
// byte('\x01') or int(-3).
func parseCorpusFile(s string) ([]any, error) {
	body, ok := strings.CutPrefix(s, "go test fuzz v1\n")
	if !ok {
		return nil, fmt.Errorf(`missing "go test fuzz v1" header`)
	}
	var vals []any
	for i, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		v, err := parseCorpusValue(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", i+2, err)
		}
		vals = append(vals, v)
	}
	return vals, nil
}

func parseCorpusValue(line string) (any, error) {
	expr, err := parser.ParseExpr(line)
	if err != nil {
		return nil, err
	}
	call, ok := expr.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return nil, fmt.Errorf("want a conversion such as string(\"x\"), got %s", line)
	}
	typ := ""
	switch fn := call.Fun.(type) {
	case *ast.Ident:
		typ = fn.Name
	case *ast.ArrayType:
		if id, ok := fn.Elt.(*ast.Ident); ok && fn.Len == nil && (id.Name == "byte" || id.Name == "uint8") {
			typ = "[]byte"
		}
	}
	if typ == "bool" {
		id, ok := call.Args[0].(*ast.Ident)
		if !ok || (id.Name != "true" && id.Name != "false") {
			return nil, fmt.Errorf("bad bool in %s", line)
		}
		return id.Name == "true", nil
	}
	neg := false
	arg := call.Args[0]
	if u, ok := arg.(*ast.UnaryExpr); ok && u.Op == token.SUB {
		neg, arg = true, u.X
	}
	lit, ok := arg.(*ast.BasicLit)
	if !ok {
		return nil, fmt.Errorf("want a literal in %s", line)
	}
	switch typ {
	case "string", "[]byte":
		if lit.Kind != token.STRING || neg {
			return nil, fmt.Errorf("want a string literal in %s", line)
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			return nil, err
		}
		if typ == "string" {
			return s, nil
		}
		return []byte(s), nil
	}
	var n int64
	switch lit.Kind {
	case token.CHAR:
		r, _, _, err := strconv.UnquoteChar(lit.Value[1:len(lit.Value)-1], '\'')
		if err != nil {
			return nil, err
		}
		n = int64(r)
	case token.INT:
		u, err := strconv.ParseUint(lit.Value, 0, 64)
		if err != nil {
			return nil, err
		}
		n = int64(u)
	default:
		return nil, fmt.Errorf("want an integer or character literal in %s", line)
	}
	if neg {
		n = -n
	}
	switch typ {
	case "byte", "uint8":
		return uint8(n), nil
	case "uint16":
		return uint16(n), nil
	case "uint32":
		return uint32(n), nil
	case "uint64":
		return uint64(n), nil
	case "uint":
		return uint(n), nil
	case "int8":
		return int8(n), nil
	case "int16":
		return int16(n), nil
	case "int32", "rune":
		return int32(n), nil
	case "int64":
		return n, nil
	case "int":
		return int(n), nil
	}
	return nil, fmt.Errorf("unsupported type %q in %s", typ, line)
}
