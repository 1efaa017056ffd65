package pgeval

import (
	"context"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// searchPath is the session's effective schema search path: pg_catalog
// first (unless listed), then search_path with "$user" resolved.
func searchPath(env *Env) []string {
	sp := `"$user", public`
	if env != nil && env.Setting != nil {
		if v, ok := env.Setting("search_path"); ok {
			sp = v
		}
	}
	var out []string
	hasCatalog := false
	for _, p := range strings.Split(sp, ",") {
		p = strings.TrimSpace(p)
		if strings.HasPrefix(p, `"`) && strings.HasSuffix(p, `"`) && len(p) >= 2 {
			p = strings.ReplaceAll(p[1:len(p)-1], `""`, `"`)
		}
		if p == "" {
			continue
		}
		if p == "$user" {
			if env == nil {
				continue
			}
			p = env.User
		}
		if p == "pg_catalog" {
			hasCatalog = true
		}
		out = append(out, p)
	}
	if !hasCatalog {
		out = append([]string{"pg_catalog"}, out...)
	}
	return out
}

// currentSchema is current_schema(): the first schema of search_path
// that is not the user's own (cellar creates no per-user schemas).
func currentSchema(env *Env) any {
	for _, s := range searchPath(env) {
		if s == "pg_catalog" || (env != nil && s == env.User && s != "public") {
			continue
		}
		return s
	}
	return nil
}

// catTable is a catalog relation read whole, with its columns by name.
type catTable struct {
	cols map[string]int
	rows [][]any
}

func (t *catTable) get(row []any, col string) any {
	i, ok := t.cols[col]
	if !ok || i >= len(row) {
		return nil
	}
	return row[i]
}

// catalog reads pg_catalog.rel once per execution.
func catalog(ec *evalCtx, rel string) (*catTable, error) {
	if ec == nil || ec.env == nil || ec.env.Catalog == nil {
		return nil, sqlstate.Errorf(sqlstate.CodeUndefinedTable, "relation \"pg_catalog.%s\" does not exist", rel)
	}
	key := "catalog:" + rel
	if ec.run != nil {
		if t, ok := ec.run.subs[key]; ok && len(t) == 1 {
			return t[0][0].(*catTable), nil
		}
	}
	ctx := ec.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	r, err := ec.env.Catalog.Relation(ctx, "pg_catalog", rel)
	if err != nil {
		return nil, err
	}
	t := &catTable{cols: map[string]int{}}
	cols := r.Columns()
	needed := make([]bool, len(cols))
	for i, c := range cols {
		t.cols[c.Name] = i
		needed[i] = true
	}
	rows, err := r.Scan(ctx, ScanRequest{Needed: needed, Limit: -1, Args: ec.args, Env: ec.env})
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for {
		row, err := rows.Next(ctx)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		t.rows = append(t.rows, row)
	}
	if ec.run != nil {
		ec.run.setSub(key, [][]any{{t}})
	}
	return t, nil
}

func oidOf(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case Reg:
		return int64(x.OID)
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return -1
}

// namespaceOID looks a schema up by name.
func namespaceOID(ec *evalCtx, name string) (int64, bool, error) {
	t, err := catalog(ec, "pg_namespace")
	if err != nil {
		return 0, false, err
	}
	for _, r := range t.rows {
		if str(t.get(r, "nspname")) == name {
			return oidOf(t.get(r, "oid")), true, nil
		}
	}
	return 0, false, nil
}

func namespaceName(ec *evalCtx, oid int64) string {
	t, err := catalog(ec, "pg_namespace")
	if err != nil {
		return ""
	}
	for _, r := range t.rows {
		if oidOf(t.get(r, "oid")) == oid {
			return str(t.get(r, "nspname"))
		}
	}
	return ""
}

// splitQualified splits a possibly quoted, dotted name as
// PostgreSQL's stringToQualifiedNameList does.
func splitQualified(s string) ([]string, error) {
	var parts []string
	var b strings.Builder
	inQuote, quoted := false, false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case inQuote && ch == '"' && i+1 < len(s) && s[i+1] == '"':
			b.WriteByte('"')
			i++
		case ch == '"':
			inQuote = !inQuote
			quoted = true
		case ch == '.' && !inQuote:
			parts = append(parts, finishIdent(b.String(), quoted))
			b.Reset()
			quoted = false
		default:
			b.WriteByte(ch)
		}
	}
	if inQuote {
		return nil, sqlstate.Errorf(sqlstate.CodeInvalidTextRepresent, "invalid name syntax")
	}
	parts = append(parts, finishIdent(b.String(), quoted))
	for _, p := range parts {
		if p == "" {
			return nil, sqlstate.Errorf(sqlstate.CodeInvalidTextRepresent, "invalid name syntax")
		}
	}
	return parts, nil
}

func finishIdent(s string, quoted bool) string {
	if quoted {
		return s
	}
	return strings.ToLower(strings.TrimSpace(s))
}

// regFromName is the input function of the reg* types.
func regFromName(s string, to uint32, ec *evalCtx) (any, error) {
	if n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
		return regFromOID(uint32(n), to, ec)
	}
	if to == OIDRegtype {
		name := strings.ToLower(strings.TrimSpace(strings.TrimPrefix(s, "pg_catalog.")))
		if oid, ok := typeNames[name]; ok {
			return Reg{OID: oid, Name: typeName(oid)}, nil
		}
		if strings.HasSuffix(name, "[]") {
			if oid, ok := typeNames[strings.TrimSuffix(name, "[]")]; ok && arrayOf[oid] != 0 {
				return Reg{OID: arrayOf[oid], Name: typeName(arrayOf[oid])}, nil
			}
		}
	}
	parts, err := splitQualified(s)
	if err != nil {
		return nil, err
	}
	name := parts[len(parts)-1]
	schemas := searchPath(envOf(ec))
	if len(parts) > 1 {
		schemas = []string{parts[len(parts)-2]}
	}
	lookup := func(rel, nameCol, nsCol string) (int64, bool, error) {
		t, err := catalog(ec, rel)
		if err != nil {
			return 0, false, err
		}
		for _, sch := range schemas {
			var nsOID int64 = -1
			if nsCol != "" {
				o, ok, err := namespaceOID(ec, sch)
				if err != nil {
					return 0, false, err
				}
				if !ok {
					continue
				}
				nsOID = o
			}
			for _, r := range t.rows {
				if str(t.get(r, nameCol)) == name && (nsCol == "" || oidOf(t.get(r, nsCol)) == nsOID) {
					return oidOf(t.get(r, "oid")), true, nil
				}
			}
		}
		return 0, false, nil
	}
	switch to {
	case OIDRegclass:
		oid, ok, err := lookup("pg_class", "relname", "relnamespace")
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, sqlstate.Errorf(sqlstate.CodeUndefinedTable, "relation \"%s\" does not exist", s)
		}
		return regFromOID(uint32(oid), to, ec)
	case OIDRegtype:
		oid, ok, err := lookup("pg_type", "typname", "typnamespace")
		if err != nil || !ok {
			return nil, sqlstate.Errorf(codeUndefinedObject, "type \"%s\" does not exist", s)
		}
		return regFromOID(uint32(oid), to, ec)
	case OIDRegproc:
		oid, ok, err := lookup("pg_proc", "proname", "pronamespace")
		if err != nil || !ok {
			return nil, sqlstate.Errorf(sqlstate.CodeUndefinedFunction, "function \"%s\" does not exist", s)
		}
		return Reg{OID: uint32(oid), Name: name}, nil
	case OIDRegnamespace:
		oid, ok, err := namespaceOID(ec, name)
		if err != nil || !ok {
			return nil, sqlstate.Errorf(codeUndefinedSchema, "schema \"%s\" does not exist", s)
		}
		return Reg{OID: uint32(oid), Name: name}, nil
	case OIDRegrole:
		if env := envOf(ec); env != nil && name == env.User {
			return Reg{OID: 10, Name: name}, nil
		}
		schemas = []string{""}
		oid, ok, err := lookup("pg_authid", "rolname", "")
		if err != nil || !ok {
			return nil, sqlstate.Errorf(codeUndefinedObject, "role \"%s\" does not exist", s)
		}
		return Reg{OID: uint32(oid), Name: name}, nil
	}
	return nil, cannotCast(pgtypes.OIDText, to)
}

func envOf(ec *evalCtx) *Env {
	if ec == nil {
		return nil
	}
	return ec.env
}

// regFromOID makes a reg* value of an OID, finding the name it prints
// as (the number itself if there is none).
func regFromOID(oid uint32, to uint32, ec *evalCtx) (any, error) {
	switch to {
	case OIDOid, OIDXid:
		return int64(oid), nil
	case OIDRegtype, OIDRegclass, OIDRegnamespace, OIDRegproc, OIDRegrole:
		if oid == 0 {
			// Every reg* type prints InvalidOid as "-" (asyncpg reads
			// typelem::regtype::text of types without an element).
			return Reg{OID: 0, Name: "-"}, nil
		}
	}
	switch to {
	case OIDRegtype:
		if n := typeName(oid); !strings.HasPrefix(n, "type ") {
			return Reg{OID: oid, Name: n}, nil
		}
		if t, err := catalog(ec, "pg_type"); err == nil {
			for _, r := range t.rows {
				if oidOf(t.get(r, "oid")) == int64(oid) {
					return Reg{OID: oid, Name: str(t.get(r, "typname"))}, nil
				}
			}
		}
		return Reg{OID: oid}, nil
	case OIDRegclass:
		t, err := catalog(ec, "pg_class")
		if err != nil {
			return Reg{OID: oid}, nil
		}
		for _, r := range t.rows {
			if oidOf(t.get(r, "oid")) == int64(oid) {
				name := str(t.get(r, "relname"))
				ns := namespaceName(ec, oidOf(t.get(r, "relnamespace")))
				visible := false
				for _, s := range searchPath(envOf(ec)) {
					if s == ns {
						visible = true
					}
				}
				if !visible && ns != "" {
					name = quoteIdent(ns) + "." + quoteIdent(name)
				} else {
					name = quoteIdent(name)
				}
				return Reg{OID: oid, Name: name}, nil
			}
		}
		return Reg{OID: oid}, nil
	case OIDRegnamespace:
		if n := namespaceName(ec, int64(oid)); n != "" {
			return Reg{OID: oid, Name: quoteIdent(n)}, nil
		}
		return Reg{OID: oid}, nil
	case OIDRegproc:
		if t, err := catalog(ec, "pg_proc"); err == nil {
			for _, r := range t.rows {
				if oidOf(t.get(r, "oid")) == int64(oid) {
					return Reg{OID: oid, Name: str(t.get(r, "proname"))}, nil
				}
			}
		}
		return Reg{OID: oid}, nil
	case OIDRegrole:
		if oid == 10 && envOf(ec) != nil {
			return Reg{OID: oid, Name: ec.env.User}, nil
		}
		return Reg{OID: oid}, nil
	}
	return int64(oid), nil
}

// attNames maps attnum → attname of a relation.
func attNames(ec *evalCtx, rel int64) (map[int64]string, error) {
	t, err := catalog(ec, "pg_attribute")
	if err != nil {
		return nil, err
	}
	out := map[int64]string{}
	for _, r := range t.rows {
		if oidOf(t.get(r, "attrelid")) == rel {
			out[toInt(t.get(r, "attnum"))] = str(t.get(r, "attname"))
		}
	}
	return out, nil
}

func arrayInts(v any) []int64 {
	a, ok := v.(Array)
	if !ok {
		if s, ok := v.(string); ok {
			var out []int64
			for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == '{' || r == '}' || r == ',' || r == ' ' }) {
				n, _ := strconv.ParseInt(f, 10, 64)
				out = append(out, n)
			}
			return out
		}
		return nil
	}
	var out []int64
	for _, x := range a.Vals {
		out = append(out, toInt(x))
	}
	return out
}

func colList(names map[int64]string, nums []int64) string {
	var parts []string
	for _, n := range nums {
		parts = append(parts, quoteIdent(names[n]))
	}
	return strings.Join(parts, ", ")
}

func relName(ec *evalCtx, oid int64, qualify bool) string {
	t, err := catalog(ec, "pg_class")
	if err != nil {
		return ""
	}
	for _, r := range t.rows {
		if oidOf(t.get(r, "oid")) == oid {
			n := quoteIdent(str(t.get(r, "relname")))
			if qualify {
				n = quoteIdent(namespaceName(ec, oidOf(t.get(r, "relnamespace")))) + "." + n
			}
			return n
		}
	}
	return ""
}

func constraintDef(ec *evalCtx, oid int64) (any, error) {
	t, err := catalog(ec, "pg_constraint")
	if err != nil {
		return nil, err
	}
	for _, r := range t.rows {
		if oidOf(t.get(r, "oid")) != oid {
			continue
		}
		rel := oidOf(t.get(r, "conrelid"))
		names, err := attNames(ec, rel)
		if err != nil {
			return nil, err
		}
		keys := arrayInts(t.get(r, "conkey"))
		switch str(t.get(r, "contype")) {
		case "p":
			return "PRIMARY KEY (" + colList(names, keys) + ")", nil
		case "u":
			return "UNIQUE (" + colList(names, keys) + ")", nil
		case "f":
			frel := oidOf(t.get(r, "confrelid"))
			fnames, err := attNames(ec, frel)
			if err != nil {
				return nil, err
			}
			return "FOREIGN KEY (" + colList(names, keys) + ") REFERENCES " + relName(ec, frel, false) + "(" + colList(fnames, arrayInts(t.get(r, "confkey"))) + ")", nil
		case "c":
			if b := t.get(r, "conbin"); b != nil {
				return "CHECK (" + str(b) + ")", nil
			}
		case "n":
			return "NOT NULL " + colList(names, keys), nil
		}
		return nil, nil
	}
	return nil, nil
}

func indexDef(ec *evalCtx, oid int64, col int64) (any, error) {
	t, err := catalog(ec, "pg_index")
	if err != nil {
		return nil, err
	}
	for _, r := range t.rows {
		if oidOf(t.get(r, "indexrelid")) != oid {
			continue
		}
		rel := oidOf(t.get(r, "indrelid"))
		names, err := attNames(ec, rel)
		if err != nil {
			return nil, err
		}
		keys := arrayInts(t.get(r, "indkey"))
		if col > 0 {
			if col > int64(len(keys)) {
				return "", nil
			}
			return quoteIdent(names[keys[col-1]]), nil
		}
		unique := ""
		if t.get(r, "indisunique") == true {
			unique = "UNIQUE "
		}
		am := "btree"
		if ct, err := catalog(ec, "pg_class"); err == nil {
			for _, cr := range ct.rows {
				if oidOf(ct.get(cr, "oid")) == oid {
					if amOID := oidOf(ct.get(cr, "relam")); amOID > 0 {
						if at, err := catalog(ec, "pg_am"); err == nil {
							for _, ar := range at.rows {
								if oidOf(at.get(ar, "oid")) == amOID {
									am = str(at.get(ar, "amname"))
								}
							}
						}
					}
				}
			}
		}
		return "CREATE " + unique + "INDEX " + relName(ec, oid, false) + " ON " + relName(ec, rel, true) + " USING " + am + " (" + colList(names, keys) + ")", nil
	}
	return nil, nil
}

// description reads pg_description (or pg_shdescription).
func description(ec *evalCtx, rel string, objoid, classoid, subid int64) (any, error) {
	t, err := catalog(ec, rel)
	if err != nil {
		return nil, nil
	}
	for _, r := range t.rows {
		if oidOf(t.get(r, "objoid")) != objoid {
			continue
		}
		if classoid >= 0 && oidOf(t.get(r, "classoid")) != classoid {
			continue
		}
		if subid >= 0 && toInt(t.get(r, "objsubid")) != subid {
			continue
		}
		return t.get(r, "description"), nil
	}
	return nil, nil
}

// relationVisible is pg_table_is_visible: the relation's schema is on
// the search path.
func relationVisible(ec *evalCtx, oid int64) (any, error) {
	t, err := catalog(ec, "pg_class")
	if err != nil {
		return true, nil
	}
	for _, r := range t.rows {
		if oidOf(t.get(r, "oid")) == oid {
			ns := namespaceName(ec, oidOf(t.get(r, "relnamespace")))
			for _, s := range searchPath(ec.env) {
				if s == ns {
					return true, nil
				}
			}
			return false, nil
		}
	}
	return nil, nil
}

func addSystemFuncs(add func(string, ...*builtin)) {
	constFn := func(ret uint32, v any) *builtin {
		return &builtin{ret: ret, fn: func(*evalCtx, []any, []uint32) (any, error) { return v, nil }}
	}
	// anyArgs accepts n..m arguments of any type: functions whose answer
	// does not depend on them in cellar.
	anyArgs := func(n, m int, ret uint32, f func(ec *evalCtx, a []any, t []uint32) (any, error)) *builtin {
		args := make([]uint32, m)
		for i := range args {
			args[i] = pAny
		}
		return &builtin{args: args, min: n, lenient: true, ret: ret, fn: f}
	}
	always := func(v any) func(*evalCtx, []any, []uint32) (any, error) {
		return func(*evalCtx, []any, []uint32) (any, error) { return v, nil }
	}
	// version() agrees with SHOW server_version when the session has it.
	add("version", &builtin{ret: tText, fn: func(ec *evalCtx, _ []any, _ []uint32) (any, error) {
		v := ServerVersion
		if ec.env != nil && ec.env.Setting != nil {
			if s, ok := ec.env.Setting("server_version"); ok && strings.HasPrefix(s, "15.") {
				v = s
			}
		}
		return "PostgreSQL " + v + " (cellar) on x86_64-pc-linux-gnu, compiled by Go, 64-bit", nil
	}})
	add("current_database", &builtin{ret: tName, fn: func(ec *evalCtx, _ []any, _ []uint32) (any, error) { return ec.env.Database, nil }})
	add("current_catalog", &builtin{ret: tName, fn: func(ec *evalCtx, _ []any, _ []uint32) (any, error) { return ec.env.Database, nil }})
	add("current_schema", &builtin{ret: tName, fn: func(ec *evalCtx, _ []any, _ []uint32) (any, error) { return currentSchema(ec.env), nil }})
	add("current_schemas", &builtin{args: []uint32{tBool}, ret: 1003, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		out := Array{Elem: tName, Vals: []any{}}
		for _, s := range searchPath(ec.env) {
			if s == "pg_catalog" && a[0] != true {
				continue
			}
			if ec.env != nil && s == ec.env.User && s != "public" {
				continue
			}
			out.Vals = append(out.Vals, s)
		}
		return out, nil
	}})
	userFn := &builtin{ret: tName, fn: func(ec *evalCtx, _ []any, _ []uint32) (any, error) { return ec.env.User, nil }}
	add("current_user", userFn)
	add("session_user", userFn)
	add("pg_backend_pid", &builtin{ret: tInt4, fn: func(ec *evalCtx, _ []any, _ []uint32) (any, error) { return int64(ec.env.BackendPID), nil }})
	// A pid no backend has, or a wait that runs out, is false with
	// PostgreSQL's warning.
	signal := func(ec *evalCtx, pid int64, terminate bool, wait time.Duration) (any, error) {
		outcome := NoSuchBackend
		if ec.env.SignalBackend != nil && pid > 0 && pid <= math.MaxUint32 {
			var err error
			if outcome, err = ec.env.SignalBackend(ec.ctx, uint32(pid), terminate, wait); err != nil {
				return nil, err
			}
		}
		var warning *sqlstate.Error
		switch outcome {
		case Signalled:
			return true, nil
		case NotTerminated:
			warning = sqlstate.Notice("WARNING", sqlstate.CodeWarning, "backend with PID %d did not terminate within %d milliseconds", pid, wait.Milliseconds())
		default:
			warning = sqlstate.Notice("WARNING", sqlstate.CodeWarning, "PID %d is not a PostgreSQL backend process", pid)
		}
		if ec.env.Notice != nil {
			ec.env.Notice(warning)
		}
		return false, nil
	}
	add("pg_cancel_backend", &builtin{args: []uint32{tInt4}, ret: tBool, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		return signal(ec, a[0].(int64), false, 0)
	}})
	add("pg_terminate_backend", &builtin{args: []uint32{tInt4, tInt8}, min: 1, names: []string{"pid", "timeout"}, defaults: []any{int64(0)},
		fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
			ms := int64(0)
			if len(a) > 1 {
				ms = a[1].(int64)
			}
			if ms < 0 {
				return nil, sqlstate.Errorf(sqlstate.CodeInvalidParameterValue, "\"timeout\" must not be negative")
			}
			return signal(ec, a[0].(int64), true, time.Duration(ms)*time.Millisecond)
		}, ret: tBool})
	add("inet_server_addr", constFn(tText, nil))
	add("inet_client_addr", constFn(tText, nil))
	add("inet_server_port", constFn(tInt4, nil))
	add("inet_client_port", constFn(tInt4, nil))
	add("pg_postmaster_start_time", &builtin{ret: tTS, fn: func(ec *evalCtx, _ []any, _ []uint32) (any, error) { return ec.env.Now.UTC(), nil }})
	add("pg_conf_load_time", &builtin{ret: tTS, fn: func(ec *evalCtx, _ []any, _ []uint32) (any, error) { return ec.env.Now.UTC(), nil }})
	add("pg_is_in_recovery", constFn(tBool, false))
	// A session can take no advisory lock (the functions below refuse),
	// so releasing all of them is done at once: connection pools call it
	// whenever a connection comes back (asyncpg's reset).
	add("pg_advisory_unlock_all", constFn(pgtypes.OIDVoid, ""))
	for _, name := range []string{"pg_advisory_lock", "pg_advisory_lock_shared", "pg_try_advisory_lock", "pg_try_advisory_lock_shared",
		"pg_advisory_unlock", "pg_advisory_unlock_shared", "pg_advisory_xact_lock", "pg_advisory_xact_lock_shared",
		"pg_try_advisory_xact_lock", "pg_try_advisory_xact_lock_shared"} {
		ret := tBool
		if !strings.Contains(name, "try") && !strings.Contains(name, "unlock") {
			ret = pgtypes.OIDVoid
		}
		add(name, anyArgs(1, 2, ret, func(*evalCtx, []any, []uint32) (any, error) {
			return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "advisory locks are not supported by cellar")
		}))
	}
	add("pg_client_encoding", constFn(tName, "UTF8"))
	add("pg_encoding_to_char", &builtin{args: []uint32{tInt4}, ret: tName, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		switch a[0].(int64) {
		case 6:
			return "UTF8", nil
		case 0:
			return "SQL_ASCII", nil
		}
		return "", nil
	}})
	add("pg_char_to_encoding", &builtin{args: []uint32{tName}, ret: tInt4, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		switch strings.ToUpper(str(a[0])) {
		case "UTF8", "UTF-8", "UNICODE":
			return int64(6), nil
		case "SQL_ASCII":
			return int64(0), nil
		}
		return int64(-1), nil
	}})
	add("current_setting", &builtin{args: []uint32{tText, tBool}, min: 1, ret: tText, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		name := strings.ToLower(str(a[0]))
		if ec.env.Setting != nil {
			if v, ok := ec.env.Setting(name); ok {
				return v, nil
			}
		}
		if len(a) > 1 && a[1] == true {
			return nil, nil
		}
		return nil, sqlstate.Errorf(codeUndefinedObject, "unrecognized configuration parameter \"%s\"", name)
	}})
	// set_config changes the session through Env.SetSetting and returns
	// the value, as PostgreSQL does.
	add("set_config", &builtin{args: []uint32{tText, tText, tBool}, ret: tText, lenient: true, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		if a[0] == nil {
			return nil, sqlstate.Errorf(codeInvalidParameterValue, "SET requires parameter name")
		}
		val := ""
		if a[1] != nil {
			val = str(a[1])
		}
		if ec.env != nil && ec.env.SetSetting != nil {
			if err := ec.env.SetSetting(strings.ToLower(str(a[0])), val, a[2] == true); err != nil {
				return nil, err
			}
		}
		return val, nil
	}})
	add("pg_get_userbyid", &builtin{args: []uint32{OIDOid}, ret: tName, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		oid := oidOf(a[0])
		if oid == 10 {
			return ec.env.User, nil
		}
		for _, rel := range []string{"pg_authid", "pg_roles"} {
			if t, err := catalog(ec, rel); err == nil {
				for _, r := range t.rows {
					if oidOf(t.get(r, "oid")) == oid {
						return t.get(r, "rolname"), nil
					}
				}
			}
		}
		return "unknown (OID=" + strconv.FormatInt(oid, 10) + ")", nil
	}})
	add("pg_get_keywords", &builtin{cols: func([]uint32) []pgtypes.Column {
		return []pgtypes.Column{{Name: "word", OID: tText}, {Name: "catcode", OID: OIDChar}, {Name: "barelabel", OID: tBool}, {Name: "catdesc", OID: tText}, {Name: "baredesc", OID: tText}}
	}, srf: func(*evalCtx, []any, []uint32) ([][]any, error) {
		out := make([][]any, 0, len(keywords))
		for _, k := range keywords {
			bd := "cannot be bare label"
			if k.bare {
				bd = "can be bare label"
			}
			out = append(out, []any{k.word, strings.ToUpper(k.cat[:1]), k.bare, catDesc[k.cat], bd})
		}
		return out, nil
	}})
	add("format_type", &builtin{args: []uint32{OIDOid, tInt4}, lenient: true, ret: tText, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		if a[0] == nil {
			return nil, nil
		}
		typmod := int64(-1)
		if a[1] != nil {
			typmod = a[1].(int64)
		}
		oid := uint32(oidOf(a[0]))
		if (oid == OIDInterval || elemOf[oid] == OIDInterval) && typmod >= 0 && !pgtypes.ValidIntervalTypmod(int32(typmod)) {
			return nil, sqlstate.Errorf(sqlstate.CodeInternal, "invalid INTERVAL typmod: 0x%x", typmod)
		}
		s := FormatType(oid, typmod)
		if s == "???" {
			if r, err := regFromOID(oid, OIDRegtype, ec); err == nil {
				if n := r.(Reg).Name; n != "" {
					return n, nil
				}
			}
		}
		return s, nil
	}})
	for _, n := range []string{"pg_table_is_visible"} {
		add(n, &builtin{args: []uint32{OIDOid}, ret: tBool, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) { return relationVisible(ec, oidOf(a[0])) }})
	}
	for _, n := range []string{"pg_type_is_visible", "pg_function_is_visible", "pg_operator_is_visible", "pg_opclass_is_visible", "pg_collation_is_visible", "pg_conversion_is_visible", "pg_ts_config_is_visible"} {
		add(n, &builtin{args: []uint32{OIDOid}, ret: tBool, fn: always(true)})
	}
	// cellar has no privileges yet: every check answers true.
	for _, n := range []string{"has_table_privilege", "has_schema_privilege", "has_database_privilege", "has_any_column_privilege",
		"has_column_privilege", "has_function_privilege", "has_sequence_privilege", "has_tablespace_privilege", "has_type_privilege",
		"has_foreign_data_wrapper_privilege", "has_server_privilege", "has_language_privilege", "pg_has_role"} {
		add(n, anyArgs(2, 4, tBool, always(true)))
	}
	add("obj_description", &builtin{args: []uint32{OIDOid, tName}, min: 1, ret: tText, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		classoid := int64(-1)
		if len(a) > 1 {
			r, err := regFromName(str(a[1]), OIDRegclass, ec)
			if err != nil {
				return nil, nil
			}
			classoid = int64(r.(Reg).OID)
		}
		return description(ec, "pg_description", oidOf(a[0]), classoid, 0)
	}})
	add("col_description", &builtin{args: []uint32{OIDOid, tInt4}, ret: tText, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		return description(ec, "pg_description", oidOf(a[0]), 1259, a[1].(int64))
	}})
	add("shobj_description", &builtin{args: []uint32{OIDOid, tName}, ret: tText, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		r, err := regFromName(str(a[1]), OIDRegclass, ec)
		if err != nil {
			return nil, nil
		}
		return description(ec, "pg_shdescription", oidOf(a[0]), int64(r.(Reg).OID), -1)
	}})
	add("pg_get_expr", &builtin{args: []uint32{tText, OIDOid, tBool}, min: 2, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		if str(a[0]) == "" {
			return nil, nil
		}
		return str(a[0]), nil
	}})
	add("pg_get_constraintdef", &builtin{args: []uint32{OIDOid, tBool}, min: 1, ret: tText, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) { return constraintDef(ec, oidOf(a[0])) }})
	add("pg_get_indexdef", &builtin{args: []uint32{OIDOid, tInt4, tBool}, min: 1, ret: tText, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
		col := int64(0)
		if len(a) > 1 {
			col = a[1].(int64)
		}
		return indexDef(ec, oidOf(a[0]), col)
	}})
	for _, n := range []string{"pg_get_viewdef", "pg_get_triggerdef", "pg_get_ruledef", "pg_get_partkeydef",
		"pg_get_statisticsobjdef_columns", "pg_get_functiondef", "pg_get_partition_constraintdef", "pg_get_function_sqlbody"} {
		add(n, anyArgs(1, 2, tText, always(nil)))
	}
	for i, n := range []string{"pg_get_function_result", "pg_get_function_arguments", "pg_get_function_identity_arguments"} {
		add(n, &builtin{args: []uint32{OIDOid}, ret: tText, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
			if ec.env.FunctionText == nil {
				return nil, nil
			}
			oid := oidOf(a[0])
			if oid < 0 || oid > math.MaxUint32 {
				return nil, nil
			}
			result, args, identity, ok := ec.env.FunctionText(uint32(oid))
			if !ok {
				return nil, nil
			}
			return [...]string{result, args, identity}[i], nil
		}})
	}
	add("pg_get_serial_sequence", &builtin{args: []uint32{tText, tText}, ret: tText, fn: always(nil)})
	for _, n := range []string{"pg_relation_size", "pg_total_relation_size", "pg_table_size", "pg_indexes_size", "pg_database_size", "pg_stat_get_numscans",
		"pg_stat_get_tuples_returned", "pg_stat_get_live_tuples", "pg_stat_get_dead_tuples"} {
		add(n, anyArgs(1, 2, tInt8, always(int64(0))))
	}
	add("pg_size_pretty", &builtin{args: []uint32{tInt8}, ret: tText, fn: func(_ *evalCtx, a []any, _ []uint32) (any, error) {
		n := a[0].(int64)
		units := []string{"bytes", "kB", "MB", "GB", "TB"}
		i := 0
		for (n >= 10*1024 || n <= -10*1024) && i < len(units)-1 {
			n = (n + 512) / 1024
			i++
		}
		return strconv.FormatInt(n, 10) + " " + units[i], nil
	}})
	add("pg_relation_is_publishable", anyArgs(1, 1, tBool, always(false)))
	add("pg_tablespace_location", anyArgs(1, 1, tText, always("")))
	add("pg_my_temp_schema", constFn(OIDOid, int64(0)))
	add("pg_is_other_temp_schema", anyArgs(1, 1, tBool, always(false)))
	add("pg_typeof", &builtin{args: []uint32{pAny}, lenient: true, ret: OIDRegtype, fn: func(_ *evalCtx, _ []any, t []uint32) (any, error) {
		return Reg{OID: t[0], Name: typeName(t[0])}, nil
	}})
	toReg := func(to uint32) *builtin {
		return &builtin{args: []uint32{tText}, ret: to, fn: func(ec *evalCtx, a []any, _ []uint32) (any, error) {
			v, err := regFromName(str(a[0]), to, ec)
			if err != nil {
				return nil, nil
			}
			return v, nil
		}}
	}
	add("to_regclass", toReg(OIDRegclass))
	add("to_regtype", toReg(OIDRegtype))
	add("to_regnamespace", toReg(OIDRegnamespace))
	add("to_regproc", toReg(OIDRegproc))
	add("to_regrole", toReg(OIDRegrole))
}
