package expr

import (
	"fmt"
	"sort"
	"strings"

	"github.com/flinksql/flinksql/types"
)

// builder type-checks the arguments of one function and returns the resolved call.
type builder func(name string, args []Expr) (Expr, error)

// functionTable maps upper-case SQL names to builders. It is filled once by
// newFunctionTable and never changed afterwards.
var functionTable = newFunctionTable()

func newFunctionTable() map[string]builder {
	m := map[string]builder{}
	registerOperators(m)
	registerStringFunctions(m)
	registerMathFunctions(m)
	registerTimeFunctions(m)
	registerCollectionFunctions(m)
	registerJSONFunctions(m)
	registerMoreStringFunctions(m)
	return m
}

// nonDeterministic lists the functions whose value changes between calls.
var nonDeterministic = map[string]bool{
	"RAND": true, "RAND_INTEGER": true, "UUID": true,
	"CURRENT_TIMESTAMP": true, "CURRENT_DATE": true, "CURRENT_TIME": true,
	"LOCALTIME": true, "LOCALTIMESTAMP": true, "NOW": true, "PROCTIME": true,
	"CURRENT_ROW_TIMESTAMP": true, "UNIX_TIMESTAMP": true, "CURRENT_WATERMARK": true,
}

// IsDeterministic reports whether a function always gives the same result for the same arguments.
func IsDeterministic(name string) bool { return !nonDeterministic[strings.ToUpper(name)] }

// internalNames are the operators the binder calls by names a user cannot
// write (-x is NEGATE, a[i] is ITEM, r.f is DOT): SHOW FUNCTIONS leaves them out.
var internalNames = map[string]bool{"NEGATE": true, "UNARY_PLUS": true, "ITEM": true, "DOT": true,
	"$JSON_TEXT": true, "$JSON_TEXT_NULL": true, "$JSON_MEMBER": true, "$JSON_MEMBER_ABSENT": true, "$JSON_MEMBERS_OBJECT": true}

// specialForms are the functions with a syntax of their own, bound without
// the function table.
var specialForms = []string{"CAST", "TRY_CAST", "CASE", "JSON_VALUE", "JSON_QUERY", "JSON_EXISTS", "JSON_OBJECT", "JSON_ARRAY", "JSON_ARRAYAGG", "JSON_OBJECTAGG", "OVERLAPS"}

// Functions returns the names of all built-in scalar functions and
// operators a query can use, sorted, for SHOW FUNCTIONS.
func Functions() []string {
	names := make([]string, 0, len(functionTable)+len(specialForms))
	for n := range functionTable {
		if !internalNames[n] {
			names = append(names, strings.ToLower(n))
		}
	}
	for _, n := range specialForms {
		names = append(names, strings.ToLower(n))
	}
	sort.Strings(names)
	return names
}

// Call resolves an operator or function call by its upper-case SQL name.
func Call(name string, args ...Expr) (Expr, error) {
	up := strings.ToUpper(name)
	b, ok := functionTable[up]
	if !ok {
		return nil, noMatch(name, args)
	}
	return b(up, args)
}

// noMatch is Calcite's message for an unknown function or signature.
func noMatch(name string, args []Expr) error {
	fams := make([]string, len(args))
	for i, a := range args {
		fams[i] = "<" + familyName(a.Type()) + ">"
	}
	return fmt.Errorf("No match found for function signature %s(%s)", name, strings.Join(fams, ", "))
}

var infixOps = map[string]bool{
	"+": true, "-": true, "*": true, "/": true, "=": true, "<>": true, "<": true, "<=": true,
	">": true, ">=": true, "AND": true, "OR": true, "||": true, "LIKE": true, "NOT LIKE": true,
	"SIMILAR TO": true, "NOT SIMILAR TO": true, "IS DISTINCT FROM": true, "IS NOT DISTINCT FROM": true,
}

var postfixOps = map[string]bool{
	"IS NULL": true, "IS NOT NULL": true, "IS TRUE": true, "IS NOT TRUE": true,
	"IS FALSE": true, "IS NOT FALSE": true, "IS UNKNOWN": true, "IS NOT UNKNOWN": true,
}

// callSignature renders the actual argument types of a call as Calcite does.
func callSignature(name string, args []Expr) string {
	ts := make([]string, len(args))
	for i, a := range args {
		ts[i] = "<" + sqlTypeName(a.Type()) + ">"
	}
	switch {
	case infixOps[name] && len(args) == 2:
		return ts[0] + " " + name + " " + ts[1]
	case postfixOps[name] && len(args) == 1:
		return ts[0] + " " + name
	case name == "NOT" && len(args) == 1:
		return "NOT " + ts[0]
	case name == "NEGATE" && len(args) == 1:
		return "-" + ts[0]
	}
	return name + "(" + strings.Join(ts, ", ") + ")"
}

// cannotApply is Calcite's message for arguments of the wrong types.
func cannotApply(name string, args []Expr, forms ...string) error {
	q := make([]string, len(forms))
	for i, f := range forms {
		q[i] = "'" + f + "'"
	}
	shown := name
	if name == "NEGATE" {
		shown = "-"
	}
	return fmt.Errorf("Cannot apply '%s' to arguments of type '%s'. Supported form(s): %s",
		shown, callSignature(name, args), strings.Join(q, "\n"))
}

func wrongArgCount(name string, args []Expr, want string) error {
	return fmt.Errorf("Invalid number of arguments to function '%s'. Was expecting %s arguments", name, want)
}

// argCount checks the number of arguments.
func argCount(name string, args []Expr, lo, hi int) error {
	if len(args) < lo || (hi >= 0 && len(args) > hi) {
		switch {
		case lo == hi:
			return wrongArgCount(name, args, fmt.Sprint(lo))
		case hi < 0:
			return wrongArgCount(name, args, fmt.Sprintf("at least %d", lo))
		}
		return wrongArgCount(name, args, fmt.Sprintf("%d to %d", lo, hi))
	}
	return nil
}

// anyNullable reports whether any argument may be NULL.
func anyNullable(args []Expr) bool {
	for _, a := range args {
		if a.Type().Nullable() {
			return true
		}
	}
	return false
}

// newCall builds a call node. For strict functions the result is nullable
// when any argument is.
func newCall(name string, args []Expr, t types.Type, im impl) *callExpr {
	if im.strict {
		t.NotNull = !anyNullable(args)
	}
	return &callExpr{name: name, args: args, t: t, impl: im}
}

func strictImpl(fn func(c *evalCtx, args []types.Value) (types.Value, error)) impl {
	return impl{fn: fn, strict: true}
}

// Family predicates used by signature checks; the untyped NULL fits all.
func isNull(t types.Type) bool      { return t.Root == types.RootNull }
func famNumeric(t types.Type) bool  { return isNull(t) || t.IsNumeric() }
func famInteger(t types.Type) bool  { return isNull(t) || t.IsInteger() }
func famExact(t types.Type) bool    { return isNull(t) || t.IsExact() }
func famString(t types.Type) bool   { return isNull(t) || t.IsString() }
func famBinary(t types.Type) bool   { return isNull(t) || t.IsBinary() }
func famBool(t types.Type) bool     { return isNull(t) || t.Root == types.RootBoolean }
func famAny(t types.Type) bool      { return t.Root != types.RootSymbol }
func famDatetime(t types.Type) bool { return isNull(t) || t.IsTemporal() }
func famTimestamp(t types.Type) bool {
	return isNull(t) || t.IsTimestamp()
}
func famDateOrTs(t types.Type) bool {
	return isNull(t) || t.IsTimestamp() || t.Root == types.RootDate
}
func famStringOrBinary(t types.Type) bool { return famString(t) || famBinary(t) }
func famSymbol(t types.Type) bool         { return t.Root == types.RootSymbol }

// checkArgs verifies argument families against one supported form.
func checkArgs(name string, args []Expr, form string, preds ...func(types.Type) bool) error {
	if len(args) != len(preds) {
		return cannotApply(name, args, form)
	}
	for i, p := range preds {
		if !p(args[i].Type()) {
			return cannotApply(name, args, form)
		}
	}
	return nil
}

// implicit casts e to t when its type differs (ignoring nullability).
func implicit(e Expr, t types.Type) Expr {
	et := e.Type()
	if et.EqualIgnoringNull(t) {
		return e
	}
	t.NotNull = et.NotNull
	t.TimeAttr = types.NoTimeAttr
	if l, ok := e.(*literal); ok && l.v.IsNull() {
		return NullLiteral(t)
	}
	fn, ok := castFunc(et, t)
	if !ok {
		// Callers only ask for casts they checked; keep the expression typed anyway.
		fn = func(_ *evalCtx, v types.Value) (types.Value, error) { return v, nil }
	}
	return &castExpr{e: e, t: t, implicit: true, fn: fn}
}

// toString casts a character argument to STRING representation (CHAR and
// VARCHAR share it, so only NULL needs a cast).
func stringArg(e Expr) Expr {
	if isNull(e.Type()) {
		return NullLiteral(types.StringType)
	}
	return e
}
