package expr

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/flinksql/flinksql/types"
)

// The SQL/JSON functions (Flink's, after Calcite's JsonFunctions): IS JSON,
// JSON_EXISTS, JSON_VALUE, JSON_QUERY, JSON_OBJECT, JSON_ARRAY and
// JSON_STRING. Paths are SQL/JSON paths: [lax|strict] $ followed by .key,
// ."key", ['key'], [n], [*] or .*; strict (the default) reports a missing
// member as an error, lax as an empty result.

func registerJSONFunctions(m map[string]builder) {
	for _, kind := range []string{"VALUE", "SCALAR", "ARRAY", "OBJECT"} {
		kind := kind
		for _, not := range []bool{false, true} {
			not := not
			name := "IS JSON " + kind
			if not {
				name = "IS NOT JSON " + kind
			}
			m[name] = func(name string, args []Expr) (Expr, error) {
				if err := checkArgs(name, args, "<CHARACTER> "+name, famString); err != nil {
					return nil, err
				}
				return &callExpr{name: name, args: []Expr{stringArg(args[0])}, t: types.BooleanType.WithNullable(false),
					impl: impl{fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
						ok := false
						if !v[0].IsNull() {
							if j, err := parseJSON(v[0].S); err == nil {
								switch kind {
								case "VALUE":
									ok = true
								case "SCALAR":
									ok = isScalarJSON(j)
								case "ARRAY":
									_, ok = j.([]any)
								case "OBJECT":
									_, ok = j.(*jsonObject)
								}
							}
						}
						return types.Bool(ok != not), nil
					}}}, nil
			}
		}
	}
	// $JSON_TEXT(x) is x's JSON text for JSON_ARRAYAGG's elements (raw for a
	// JSON_OBJECT / JSON_ARRAY value), NULL for NULL; $JSON_TEXT_NULL
	// writes NULL as null.
	for _, name := range []string{"$JSON_TEXT", "$JSON_TEXT_NULL"} {
		keepNull := name == "$JSON_TEXT_NULL"
		m[name] = func(name string, args []Expr) (Expr, error) {
			if err := argCount(name, args, 1, 1); err != nil {
				return nil, err
			}
			arg := args[0]
			t := types.StringType
			t.NotNull = keepNull || !arg.Type().Nullable()
			return &callExpr{name: name, args: args, t: t, impl: impl{fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
				if v[0].IsNull() && !keepNull {
					return types.NullValue, nil
				}
				var b strings.Builder
				if err := writeMember(&b, v[0], arg); err != nil {
					return types.NullValue, err
				}
				return types.String(b.String()), nil
			}}}, nil
		}
	}
	// $JSON_MEMBER(k, v) is the member "k":v of JSON_OBJECTAGG;
	// $JSON_MEMBER_ABSENT is NULL for a NULL value (ABSENT ON NULL).
	for _, name := range []string{"$JSON_MEMBER", "$JSON_MEMBER_ABSENT"} {
		absent := name == "$JSON_MEMBER_ABSENT"
		m[name] = func(name string, args []Expr) (Expr, error) {
			if err := argCount(name, args, 2, 2); err != nil {
				return nil, err
			}
			if !args[0].Type().IsString() {
				return nil, fmt.Errorf("The key of JSON_OBJECTAGG must be a character string, not %s", args[0].Type().SQLString())
			}
			val := args[1]
			t := types.StringType
			t.NotNull = false
			return &callExpr{name: name, args: args, t: t, impl: impl{fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
				if v[0].IsNull() {
					return types.NullValue, errors.New("The key of JSON_OBJECTAGG must not be NULL")
				}
				if v[1].IsNull() && absent {
					return types.NullValue, nil
				}
				var b strings.Builder
				writeJSONString(&b, v[0].S)
				b.WriteByte(':')
				if err := writeMember(&b, v[1], val); err != nil {
					return types.NullValue, err
				}
				return types.String(b.String()), nil
			}}}, nil
		}
	}
	// $JSON_MEMBERS_OBJECT(members) wraps JSON_OBJECTAGG's members, joined
	// by commas (NULL: none), into an object, refusing a repeated key.
	m["$JSON_MEMBERS_OBJECT"] = func(name string, args []Expr) (Expr, error) {
		if err := argCount(name, args, 1, 1); err != nil {
			return nil, err
		}
		return &callExpr{name: name, args: args, t: types.StringType.WithNullable(false), impl: impl{fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
			if v[0].IsNull() {
				return types.String("{}"), nil
			}
			text := "{" + v[0].S + "}"
			j, err := parseJSON(text)
			if err != nil {
				return types.NullValue, fmt.Errorf("JSON_OBJECTAGG: %v", err)
			}
			seen := map[string]bool{}
			for _, k := range j.(*jsonObject).keys {
				if seen[k] {
					return types.NullValue, fmt.Errorf("JSON_OBJECTAGG: the key '%s' occurs more than once; keys must be unique", k)
				}
				seen[k] = true
			}
			return types.String(text), nil
		}}}, nil
	}
	m["JSON_STRING"] = func(name string, args []Expr) (Expr, error) {
		if err := argCount(name, args, 1, 1); err != nil {
			return nil, err
		}
		at := args[0].Type()
		return newCall(name, args, types.StringType, strictImpl(func(_ *evalCtx, v []types.Value) (types.Value, error) {
			var b strings.Builder
			if err := writeSQLValueJSON(&b, v[0], at); err != nil {
				return types.NullValue, err
			}
			return types.String(b.String()), nil
		})), nil
	}
}

// jsonObject is a JSON object with its members in document order, as
// Jackson keeps them.
type jsonObject struct {
	keys []string
	vals []any
}

func (o *jsonObject) get(k string) (any, bool) {
	for i, key := range o.keys {
		if key == k {
			return o.vals[i], true
		}
	}
	return nil, false
}

// jsonNumber keeps a number's text.
type jsonNumber string

// parseJSON parses one JSON document into nil, bool, jsonNumber, string,
// []any and *jsonObject.
func parseJSON(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	v, err := decodeJSON(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

func decodeJSON(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeJSON(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		case '{':
			obj := &jsonObject{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string)
				v, err := decodeJSON(dec)
				if err != nil {
					return nil, err
				}
				obj.keys, obj.vals = append(obj.keys, k), append(obj.vals, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return obj, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		return jsonNumber(t), nil
	}
	return tok, nil
}

func isScalarJSON(v any) bool {
	switch v.(type) {
	case []any, *jsonObject:
		return false
	}
	return true
}

// jsonNumberText renders a number as Jackson does after parsing it: an
// integer as written, any other number as a Java double.
func jsonNumberText(n jsonNumber) string {
	s := string(n)
	if !strings.ContainsAny(s, ".eE") {
		return s
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	return types.FormatJava(types.Float(f), types.DoubleType)
}

// writeJSON serializes a parsed value compactly.
func writeJSON(b *strings.Builder, v any) {
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case jsonNumber:
		b.WriteString(jsonNumberText(x))
	case string:
		writeJSONString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSON(b, e)
		}
		b.WriteByte(']')
	case *jsonObject:
		b.WriteByte('{')
		for i, k := range x.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, k)
			b.WriteByte(':')
			writeJSON(b, x.vals[i])
		}
		b.WriteByte('}')
	case rawJSON:
		b.WriteString(string(x))
	}
}

// rawJSON is JSON text produced by JSON_OBJECT or JSON_ARRAY, inserted into
// an enclosing one as JSON, not as a string.
type rawJSON string

func writeJSONString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
}

// writeSQLValueJSON serializes a SQL value of type t as JSON: numbers and
// booleans as such, character strings quoted, arrays, maps (string keys) and
// rows (field names) as arrays and objects, binary as base64, temporal
// values as their SQL text.
func writeSQLValueJSON(b *strings.Builder, v types.Value, t types.Type) error {
	if v.IsNull() {
		b.WriteString("null")
		return nil
	}
	switch {
	case t.Root == types.RootBoolean:
		b.WriteString(strconv.FormatBool(v.Bool()))
	case t.IsInteger():
		b.WriteString(strconv.FormatInt(v.Int(), 10))
	case t.IsApprox(), t.Root == types.RootDecimal:
		b.WriteString(types.FormatJava(v, t))
	case t.IsString():
		writeJSONString(b, v.S)
	case t.IsBinary():
		writeJSONString(b, base64.StdEncoding.EncodeToString([]byte(v.S)))
	case t.Root == types.RootArray || t.Root == types.RootMultiset:
		b.WriteByte('[')
		for i, e := range v.Array() {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeSQLValueJSON(b, e, *t.Elem); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case t.Root == types.RootMap:
		m := v.Map()
		b.WriteByte('{')
		for i := range m.Keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, types.FormatJava(m.Keys[i], *t.Elem))
			b.WriteByte(':')
			if err := writeSQLValueJSON(b, m.Values[i], *t.Value); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case t.Root == types.RootRow:
		r := v.RowOf()
		b.WriteByte('{')
		for i, f := range t.Fields {
			if i > 0 {
				b.WriteByte(',')
			}
			writeJSONString(b, f.Name)
			b.WriteByte(':')
			if err := writeSQLValueJSON(b, r[i], f.Type); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		writeJSONString(b, types.FormatSQL(v, t, nil))
	}
	return nil
}

// jsonPath is a parsed SQL/JSON path.
type jsonPath struct {
	strict bool
	steps  []jsonStep
}

type jsonStep struct {
	key      string
	index    int
	isIndex  bool
	wildcard bool
}

func (p *jsonPath) definite() bool {
	for _, s := range p.steps {
		if s.wildcard {
			return false
		}
	}
	return true
}

var errJSONPath = errors.New("invalid JSON path")

func parseJSONPath(spec string) (*jsonPath, error) {
	p := &jsonPath{strict: true}
	s := strings.TrimSpace(spec)
	low := strings.ToLower(s)
	switch {
	case strings.HasPrefix(low, "lax ") || strings.HasPrefix(low, "lax\t"):
		p.strict, s = false, strings.TrimSpace(s[3:])
	case strings.HasPrefix(low, "strict ") || strings.HasPrefix(low, "strict\t"):
		s = strings.TrimSpace(s[6:])
	}
	if !strings.HasPrefix(s, "$") {
		return nil, fmt.Errorf("Illegal jsonpath spec: %s, format of the spec should be: '<lax|strict> ${expr}'", spec)
	}
	s = s[1:]
	for len(s) > 0 {
		switch {
		case s[0] == '.' && len(s) > 1 && s[1] == '[':
			s = s[1:]
		case s[0] == '.':
			s = s[1:]
			if strings.HasPrefix(s, "*") {
				p.steps = append(p.steps, jsonStep{wildcard: true})
				s = s[1:]
				continue
			}
			if strings.HasPrefix(s, `"`) {
				end := strings.IndexByte(s[1:], '"')
				if end < 0 {
					return nil, errJSONPath
				}
				p.steps = append(p.steps, jsonStep{key: s[1 : 1+end]})
				s = s[end+2:]
				continue
			}
			n := 0
			for n < len(s) && s[n] != '.' && s[n] != '[' {
				n++
			}
			if n == 0 {
				return nil, errJSONPath
			}
			p.steps = append(p.steps, jsonStep{key: strings.TrimSpace(s[:n])})
			s = s[n:]
		case s[0] == '[':
			end := strings.IndexByte(s, ']')
			if end < 0 {
				return nil, errJSONPath
			}
			in := strings.TrimSpace(s[1:end])
			s = s[end+1:]
			switch {
			case in == "*":
				p.steps = append(p.steps, jsonStep{wildcard: true})
			case len(in) >= 2 && (in[0] == '\'' || in[0] == '"') && in[len(in)-1] == in[0]:
				p.steps = append(p.steps, jsonStep{key: in[1 : len(in)-1]})
			default:
				i, err := strconv.Atoi(in)
				if err != nil {
					return nil, errJSONPath
				}
				p.steps = append(p.steps, jsonStep{index: i, isIndex: true})
			}
		case s[0] == ' ':
			s = s[1:]
		default:
			return nil, errJSONPath
		}
	}
	return p, nil
}

var errJSONMissing = errors.New("no value at the JSON path")

// eval applies the path: a definite path gives one value (errJSONMissing
// when there is none), a path with wildcards the array of its matches.
func (p *jsonPath) eval(doc any) (any, error) {
	if p.definite() {
		cur := doc
		for _, st := range p.steps {
			next, ok := step(cur, st)
			if !ok {
				return nil, errJSONMissing
			}
			cur = next
		}
		return cur, nil
	}
	matches := []any{}
	var walk func(v any, i int)
	walk = func(v any, i int) {
		if i == len(p.steps) {
			matches = append(matches, v)
			return
		}
		st := p.steps[i]
		if st.wildcard {
			switch x := v.(type) {
			case []any:
				for _, e := range x {
					walk(e, i+1)
				}
			case *jsonObject:
				for _, e := range x.vals {
					walk(e, i+1)
				}
			}
			return
		}
		if next, ok := step(v, st); ok {
			walk(next, i+1)
		}
	}
	walk(doc, 0)
	return matches, nil
}

func step(v any, st jsonStep) (any, bool) {
	switch x := v.(type) {
	case []any:
		if st.isIndex && st.index >= 0 && st.index < len(x) {
			return x[st.index], true
		}
	case *jsonObject:
		if !st.isIndex {
			return x.get(st.key)
		}
	}
	return nil, false
}

// jsonInput evaluates the common part of JSON_EXISTS, JSON_VALUE and
// JSON_QUERY: the document and the path. In lax mode a missing value is
// nil without error; in strict mode it is an error, as is bad input.
func jsonInput(doc, path string) (v any, strict bool, err error) {
	p, err := parseJSONPath(path)
	if err != nil {
		return nil, true, err
	}
	j, err := parseJSON(doc)
	if err != nil {
		return nil, p.strict, err
	}
	v, err = p.eval(j)
	if errors.Is(err, errJSONMissing) && !p.strict {
		return nil, false, nil
	}
	return v, p.strict, err
}

// JSONBehavior is what a JSON function returns ON EMPTY or ON ERROR.
type JSONBehavior struct {
	Kind    string // NULL, ERROR, DEFAULT, EMPTY ARRAY, EMPTY OBJECT, TRUE, FALSE, UNKNOWN
	Default Expr   // DEFAULT's value (JSON_VALUE)
}

// JSONExists builds JSON_EXISTS(doc, path [onError ON ERROR]); the default
// is FALSE ON ERROR.
func JSONExists(doc, path Expr, onError string) (Expr, error) {
	args := []Expr{doc, path}
	if err := checkArgs("JSON_EXISTS", args, "JSON_EXISTS(<CHARACTER>, <CHARACTER>)", famString, famString); err != nil {
		return nil, err
	}
	if onError == "" {
		onError = "FALSE"
	}
	t := types.BooleanType
	t.NotNull = false
	return &callExpr{name: "JSON_EXISTS", args: []Expr{stringArg(doc), stringArg(path)}, t: t, impl: impl{fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if v[0].IsNull() || v[1].IsNull() {
			return types.NullValue, nil
		}
		x, _, err := jsonInput(v[0].S, v[1].S)
		if err != nil {
			switch onError {
			case "TRUE":
				return types.Bool(true), nil
			case "FALSE":
				return types.Bool(false), nil
			case "UNKNOWN":
				return types.NullValue, nil
			}
			return types.NullValue, fmt.Errorf("JSON_EXISTS: %v", err)
		}
		return types.Bool(x != nil), nil
	}}}, nil
}

// JSONValue builds JSON_VALUE(doc, path RETURNING t ...): the scalar at the
// path converted to t; an empty result (nothing there, a JSON null, or in
// lax mode an array or object) gives the ON EMPTY behaviour, an error
// (bad input, in strict mode a missing member or a non-scalar, a value that
// does not convert) the ON ERROR one. Both default to NULL.
func JSONValue(doc, path Expr, t types.Type, onEmpty, onError JSONBehavior) (Expr, error) {
	args := []Expr{doc, path}
	if err := checkArgs("JSON_VALUE", args, "JSON_VALUE(<CHARACTER>, <CHARACTER>)", famString, famString); err != nil {
		return nil, err
	}
	t.NotNull = false
	conv, ok := castFunc(types.StringType, t)
	if !ok || t.Root == types.RootArray || t.Root == types.RootMap || t.Root == types.RootRow || t.Root == types.RootMultiset {
		return nil, fmt.Errorf("Unsupported RETURNING type %s of JSON_VALUE: it returns a scalar (a character string, number, boolean or temporal type)", t.SQLString())
	}
	all := []Expr{stringArg(doc), stringArg(path)}
	defaults := map[*JSONBehavior]int{}
	for _, b := range []*JSONBehavior{&onEmpty, &onError} {
		if b.Kind == "" {
			b.Kind = "NULL"
		}
		if b.Kind == "DEFAULT" {
			d, err := castTo(b.Default, t, "JSON_VALUE's DEFAULT")
			if err != nil {
				return nil, err
			}
			defaults[b] = len(all)
			all = append(all, d)
		}
	}
	behave := func(c *evalCtx, b *JSONBehavior, v []types.Value, cause error) (types.Value, error) {
		switch b.Kind {
		case "DEFAULT":
			return v[defaults[b]], nil
		case "ERROR":
			return types.NullValue, cause
		}
		return types.NullValue, nil
	}
	return &callExpr{name: "JSON_VALUE", args: all, t: t, impl: impl{fn: func(c *evalCtx, v []types.Value) (types.Value, error) {
		if v[0].IsNull() || v[1].IsNull() {
			return types.NullValue, nil
		}
		x, strict, err := jsonInput(v[0].S, v[1].S)
		if err != nil {
			return behave(c, &onError, v, fmt.Errorf("JSON_VALUE: %v", err))
		}
		if x == nil || !strict && !isScalarJSON(x) {
			return behave(c, &onEmpty, v, errors.New("Empty result of JSON_VALUE function is not allowed"))
		}
		var s string
		switch y := x.(type) {
		case string:
			s = y
		case bool:
			s = strconv.FormatBool(y)
		case jsonNumber:
			s = jsonNumberText(y)
		default:
			var b strings.Builder
			writeJSON(&b, x)
			return behave(c, &onError, v, fmt.Errorf("Strict jsonpath mode requires scalar value, and the actual value is: '%s'", b.String()))
		}
		out, err := conv(c, types.String(s))
		if err != nil {
			return behave(c, &onError, v, err)
		}
		return out, nil
	}}}, nil
}

// castTo casts e to t when its type differs, for DEFAULT values.
func castTo(e Expr, t types.Type, what string) (Expr, error) {
	if e.Type().EqualIgnoringNull(t) {
		return e, nil
	}
	if e.Type().Root == types.RootNull {
		return NullLiteral(t), nil
	}
	c, err := Cast(e, t, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", what, err)
	}
	return c, nil
}

// JSONQuery builds JSON_QUERY(doc, path [wrapper] ...): the array or object
// at the path as JSON text; wrapper is WITHOUT, CONDITIONAL or
// UNCONDITIONAL. Behaviours: NULL (the default), ERROR, EMPTY ARRAY, EMPTY
// OBJECT. With asArray (RETURNING ARRAY<STRING>) the result must be an
// array and is returned as its elements: strings as their text, other
// values as JSON text, JSON nulls as NULL.
func JSONQuery(doc, path Expr, wrapper, onEmpty, onError string, asArray bool) (Expr, error) {
	args := []Expr{doc, path}
	if err := checkArgs("JSON_QUERY", args, "JSON_QUERY(<CHARACTER>, <CHARACTER>)", famString, famString); err != nil {
		return nil, err
	}
	if onEmpty == "" {
		onEmpty = "NULL"
	}
	if onError == "" {
		onError = "NULL"
	}
	rt := types.StringType
	if asArray {
		if onEmpty == "EMPTY OBJECT" || onError == "EMPTY OBJECT" {
			return nil, errors.New("Illegal on error or on empty behavior EMPTY OBJECT for JSON_QUERY RETURNING ARRAY<STRING>")
		}
		rt = types.ArrayType(types.StringType)
	}
	behave := func(kind string, cause error) (types.Value, error) {
		switch kind {
		case "EMPTY ARRAY":
			if asArray {
				return types.ArrayValue([]types.Value{}), nil
			}
			return types.String("[]"), nil
		case "EMPTY OBJECT":
			return types.String("{}"), nil
		case "ERROR":
			return types.NullValue, cause
		}
		return types.NullValue, nil
	}
	return &callExpr{name: "JSON_QUERY", args: []Expr{stringArg(doc), stringArg(path)}, t: rt, impl: impl{fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
		if v[0].IsNull() || v[1].IsNull() {
			return types.NullValue, nil
		}
		x, strict, err := jsonInput(v[0].S, v[1].S)
		if err != nil {
			return behave(onError, fmt.Errorf("JSON_QUERY: %v", err))
		}
		if x != nil {
			switch wrapper {
			case "UNCONDITIONAL":
				x = []any{x}
			case "CONDITIONAL":
				if _, isArr := x.([]any); !isArr {
					x = []any{x}
				}
			}
		}
		if x == nil || !strict && isScalarJSON(x) {
			return behave(onEmpty, errors.New("Empty result of JSON_QUERY function is not allowed"))
		}
		var b strings.Builder
		writeJSON(&b, x)
		if isScalarJSON(x) {
			return behave(onError, fmt.Errorf("Strict jsonpath mode requires array or object value, and the actual value is: '%s'", b.String()))
		}
		if asArray {
			arr, ok := x.([]any)
			if !ok {
				return behave(onError, fmt.Errorf("JSON_QUERY RETURNING ARRAY<STRING> needs an array, and the actual value is: '%s'", b.String()))
			}
			out := make([]types.Value, len(arr))
			for i, e := range arr {
				switch y := e.(type) {
				case nil:
				case string:
					out[i] = types.String(y)
				default:
					var eb strings.Builder
					writeJSON(&eb, y)
					out[i] = types.String(eb.String())
				}
			}
			return types.ArrayValue(out), nil
		}
		return types.String(b.String()), nil
	}}}, nil
}

// isJSONConstructor reports whether e is a JSON_OBJECT or JSON_ARRAY call,
// whose text an enclosing constructor inserts as JSON.
func isJSONConstructor(e Expr) bool {
	c, ok := e.(*callExpr)
	return ok && (c.name == "JSON_OBJECT" || c.name == "JSON_ARRAY")
}

func writeMember(b *strings.Builder, v types.Value, e Expr) error {
	if isJSONConstructor(e) && !v.IsNull() {
		b.WriteString(v.S)
		return nil
	}
	return writeSQLValueJSON(b, v, e.Type())
}

// JSONObject builds JSON_OBJECT(KEY k VALUE v, ... [NULL|ABSENT ON NULL]);
// NULL ON NULL is the default.
func JSONObject(kvs []Expr, onNull string) (Expr, error) {
	absent := onNull == "ABSENT"
	for i := 0; i < len(kvs); i += 2 {
		kt := kvs[i].Type()
		if !kt.IsString() {
			return nil, fmt.Errorf("Cannot apply 'JSON_OBJECT' to arguments: the key of a member must be a character string, not %s", kt.SQLString())
		}
		if kt.Nullable() {
			return nil, fmt.Errorf("The key of a JSON_OBJECT member must not be nullable")
		}
	}
	args := make([]Expr, len(kvs))
	copy(args, kvs)
	return &callExpr{name: "JSON_OBJECT", args: args, t: types.StringType.WithNullable(false), impl: impl{fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
		var b strings.Builder
		b.WriteByte('{')
		n := 0
		for i := 0; i+1 < len(v); i += 2 {
			if v[i+1].IsNull() && absent {
				continue
			}
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			writeJSONString(&b, v[i].S)
			b.WriteByte(':')
			if err := writeMember(&b, v[i+1], args[i+1]); err != nil {
				return types.NullValue, err
			}
		}
		b.WriteByte('}')
		return types.String(b.String()), nil
	}}}, nil
}

// JSONArray builds JSON_ARRAY(v, ... [NULL|ABSENT ON NULL]); ABSENT ON NULL
// is the default.
func JSONArray(vals []Expr, onNull string) (Expr, error) {
	keepNull := onNull == "NULL"
	args := make([]Expr, len(vals))
	copy(args, vals)
	return &callExpr{name: "JSON_ARRAY", args: args, t: types.StringType.WithNullable(false), impl: impl{fn: func(_ *evalCtx, v []types.Value) (types.Value, error) {
		var b strings.Builder
		b.WriteByte('[')
		n := 0
		for i := range v {
			if v[i].IsNull() && !keepNull {
				continue
			}
			if n > 0 {
				b.WriteByte(',')
			}
			n++
			if err := writeMember(&b, v[i], args[i]); err != nil {
				return types.NullValue, err
			}
		}
		b.WriteByte(']')
		return types.String(b.String()), nil
	}}}, nil
}
