package query

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	pg "github.com/pganalyze/pg_query_go/v6"
	pgparser "github.com/pganalyze/pg_query_go/v6/parser"
	"github.com/pingcap/tidb/pkg/parser"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/pgcatalog"
	"github.com/cellardb/cellar/query/pgeval"
	"github.com/cellardb/cellar/query/pgtypes"
	"github.com/cellardb/cellar/query/sqlstate"
)

// SessionOptions describe the connection a session serves.
type SessionOptions struct {
	User            string
	Database        string
	ApplicationName string
	Superuser       bool
	// Settings are set at start (the startup packet's "options" -c
	// settings); an unknown or invalid one fails NewSession.
	Settings map[string]string
	// BackendPID is what pg_backend_pid() returns.
	BackendPID uint32
	// Clock is the wall clock for now(); default time.Now.
	Clock func() time.Time
	// Seed seeds random(); 0: a seed of its own (setseed reseeds it).
	Seed uint64
	// Tables are the cluster's tables; nil: the session has none (any
	// statement on a table fails with 42P01).
	Tables *Tables
	// SortBudget bounds each sort, DISTINCT and GROUP BY (bytes); 0: 64 MiB.
	SortBudget int64
	// ResultBudget bounds a result held before it is sent (bytes); 0: 1 GiB.
	ResultBudget int64
	// Portals are the connection's named protocol portals, which FETCH,
	// MOVE and CLOSE reach as they reach cursors; nil: none.
	Portals Portals
	// Prepared lists the connection's named prepared statements, for
	// pg_prepared_statements; nil: none.
	Prepared func() []pgcatalog.PreparedStatement
	// Sessions lists the server's sessions, for pg_stat_activity; nil:
	// this one alone.
	Sessions func() []pgcatalog.Session
	// Signal cancels the running statement of the backend pid, or with
	// terminate ends its session, on this session's behalf
	// (pg_cancel_backend, pg_terminate_backend), and with a wait waits
	// that long for the session to end; ok is false if there is no such
	// backend or it did not end in time. nil: none can be signalled.
	Signal func(ctx context.Context, pid uint32, terminate bool, wait time.Duration) (pgeval.SignalOutcome, error)
}

// TxStatus is the transaction status ReadyForQuery reports.
type TxStatus byte

const (
	TxIdle   TxStatus = 'I'
	TxActive TxStatus = 'T'
	TxFailed TxStatus = 'E'
)

// Session is one client session's SQL state: its settings and its
// transaction. It is not safe for concurrent use; a connection runs one
// statement at a time.
type Session struct {
	opts    SessionOptions
	set     settings
	setting func(string) (string, bool) // s.Setting, for Envs
	// principal is the session user, bound once for asUser.
	principal model.BoundPrincipal
	// warnings are those the running statement's functions raised
	// (Env.Notice, through notice, a method value made once); Execute
	// hands them to the client with the result.
	warnings []*sqlstate.Error
	notice   func(*sqlstate.Error)
	txSaved  *settings // the settings at BEGIN, restored by ROLLBACK
	tx       TxStatus
	reported []string // reported settings as last sent, as settings.reported; nil: none sent
	cursors  map[string]*cursor
	// savepoints of the transaction block, oldest first, each with the
	// settings at its start.
	savepoints []savepoint
	// txw holds a transaction block's buffered writes; nil outside one.
	txw *txState
	// txStart is the transaction's timestamp (now()).
	txStart time.Time
	// tidbParser reads the dialect's DDL (created on first use).
	tidbParser *parser.Parser
	// rng is random()'s source, locked since a statement's rows may be
	// evaluated by several workers; random and setSeed are its method
	// values for Envs, made once.
	rngMu   sync.Mutex
	rng     *rand.Rand
	random  func() float64
	setSeed func(float64)
}

type savepoint struct {
	name   string
	set    settings
	writes *txState
}

// NewSession starts a session.
func NewSession(opts SessionOptions) (*Session, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	s := &Session{opts: opts, set: newSettings(opts.User, opts.Superuser), tx: TxIdle, cursors: map[string]*cursor{}}
	s.setting = s.Setting // a method value allocates: made once, not per Env
	s.notice = s.addWarning
	s.principal = model.BindPrincipal(model.Principal{Name: opts.User, Superuser: opts.Superuser})
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	s.rng = rand.New(rand.NewPCG(seed, seed))
	s.random, s.setSeed = s.nextRandom, s.reseed
	if opts.ApplicationName != "" {
		s.set.byName["application_name"].value = opts.ApplicationName
	}
	for k, v := range opts.Settings {
		if err := s.setValue(k, v); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// TxStatus returns the transaction status.
func (s *Session) TxStatus() TxStatus { return s.tx }

func (s *Session) nextRandom() float64 {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64()
}

// reseed is setseed(x), x in [-1, 1]: the same x gives the same numbers
// after it, as in PostgreSQL (not PostgreSQL's numbers).
func (s *Session) reseed(x float64) {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	seed := math.Float64bits(x)
	s.rng = rand.New(rand.NewPCG(seed, seed))
}

// Setting returns a setting's value.
func (s *Session) Setting(name string) (string, bool) {
	if st, ok := s.set.boundSetting(name); ok {
		if st == nil {
			return "", false
		}
		return st.value, true
	}
	st, ok := s.set.byName[name] // names are mostly asked for in lower case
	if !ok {
		st, ok = s.set.byName[strings.ToLower(name)]
	}
	if !ok {
		return "", false
	}
	return st.value, true
}

// Style is pgtypes.StyleFrom(s.Setting) without the map lookups.
func (s *Session) Style() pgtypes.Style { return pgtypes.StyleFrom(s.setting) }

// ReportChanges returns the reported settings whose value the client has
// not been sent yet (all of them at first), by PostgreSQL's names.
func (s *Session) ReportChanges() [][2]string {
	var out [][2]string
	first := s.reported == nil
	if first {
		s.reported = make([]string, len(s.set.reportedSet))
	}
	for i, st := range s.set.reportedSet {
		if first || s.reported[i] != st.value {
			s.reported[i] = st.value
			out = append(out, [2]string{st.name, st.value})
		}
	}
	return out
}

// Statement is a parsed statement, ready to run with parameters.
type Statement struct {
	SQL string
	// Params are the parameters' type OIDs: the client's where it gave
	// them, otherwise inferred.
	Params []uint32
	// Columns describe the rows it returns; nil if it returns none.
	Columns []pgtypes.Column
	// bound, if set, describes the rows when the statement is bound
	// (BoundColumns).
	bound func(s *Session) []pgtypes.Column
	// ParamPosition is where the first parameter reference is (1-based),
	// for the error of a simple query that has one.
	ParamPosition int
	// kind names the statement for errors and the failed-transaction rule.
	kind string
	run  func(ctx context.Context, s *Session, args []any) (*Result, error)
	// endsTx: COMMIT and ROLLBACK, the statements a failed transaction
	// accepts.
	endsTx bool
	// later, if set, plans the statement when it first runs (a simple
	// query's statements on tables).
	later func(ctx context.Context, s *Session) (*Statement, error)
	// asOf sets the time a query reads its tables at (AS OF TIMESTAMP).
	asOf func(us int64)
	// typ is the statement's Type, for metrics.
	typ string
}

// Result is what a statement produced.
type Result struct {
	Columns []pgtypes.Column
	Rows    [][]any
	// Tag is the command tag ("SELECT 1", "SET", ...).
	Tag     string
	Notices []*sqlstate.Error
	// DeallocateAll, Deallocate: the wire layer drops prepared statements.
	DeallocateAll bool
	Deallocate    string
	// DiscardAll: the wire layer drops prepared statements and portals.
	DiscardAll bool
	// Copy, if set, asks for the rows as COPY data.
	Copy *CopyOut
	// CopyIn, if set, asks the wire layer for COPY data (COPY FROM
	// STDIN); the statement's tag comes from CopyIn.Done.
	CopyIn *CopyIn
}

// Parse parses a simple query string into its statements. A syntax error
// anywhere fails all of them, as in PostgreSQL; an empty or comment-only
// string has none. Statements on tables are planned when they run.
func (s *Session) Parse(sql string) ([]*Statement, error) {
	pieces, err := split(sql)
	if err != nil {
		return nil, err
	}
	nodes := make([]*pg.Node, len(pieces))
	for i := range pieces {
		if nodes[i], err = parsePiece(&pieces[i]); err != nil {
			return nil, err
		}
	}
	var out []*Statement
	for i, p := range pieces {
		n := nodes[i]
		if n == nil || tableStatement(n) || p.upsert {
			st := s.compileLater(p, n, nil)
			st.typ = statementType(p, n)
			out = append(out, st)
			continue
		}
		st, err := s.compile(context.Background(), p.text, n, nil)
		if err != nil {
			return nil, shiftPosition(err, p.offset)
		}
		st.typ = statementType(p, n)
		out = append(out, st)
	}
	return out, nil
}

// Prepare parses and plans one statement for the extended protocol, with
// the parameter types the client gave (0: infer). A string of two
// statements is refused (42601). An empty string gives nil.
func (s *Session) Prepare(ctx context.Context, sql string, paramOIDs []uint32) (*Statement, error) {
	ctx = s.asUser(ctx)
	pieces, err := split(sql)
	if err != nil {
		return nil, err
	}
	switch len(pieces) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, sqlstate.Errorf(sqlstate.CodeSyntaxError, "cannot insert multiple commands into a prepared statement")
	}
	p := pieces[0]
	n, err := parsePiece(&p)
	if err != nil {
		return nil, err
	}
	var st *Statement
	switch {
	case n == nil:
		st, err = s.compileDialect(ctx, p)
	case tableStatement(n) || p.upsert:
		st, err = s.compileTable(ctx, p, n, paramOIDs)
	default:
		st, err = s.compile(ctx, p.text, n, paramOIDs)
	}
	if st != nil {
		st.typ = statementType(p, n)
	}
	return st, err
}

// syntaxError turns pg_query's error, which carries PostgreSQL's message
// and cursor position, into a 42601.
func syntaxError(err error) error {
	e := &sqlstate.Error{Code: sqlstate.CodeSyntaxError, Message: err.Error()}
	var pe *pgparser.Error
	if errors.As(err, &pe) {
		e.Position = pe.Cursorpos
	}
	return e
}

// Execute runs a statement with its arguments (Go values of the
// statement's parameter types), under PostgreSQL's transaction rules.
// A query that fails while it makes its rows returns, with the error, a
// Result of its columns and the rows before the error.
func (s *Session) Execute(ctx context.Context, st *Statement, args []any) (*Result, error) {
	ctx = s.asUser(ctx)
	if s.tx == TxFailed && !st.endsTx {
		return nil, sqlstate.Errorf(sqlstate.CodeInFailedTransaction, "current transaction is aborted, commands ignored until end of transaction block")
	}
	if st.later != nil {
		if err := ctx.Err(); err != nil {
			return nil, canceled(err)
		}
		c, err := st.later(ctx, s)
		if err != nil {
			s.Failed()
			return nil, err
		}
		st = c
	}
	if len(args) != len(st.Params) {
		return nil, sqlstate.Errorf(sqlstate.CodeProtocolViolation, "bind message supplies %d parameters, but prepared statement requires %d", len(args), len(st.Params))
	}
	if err := ctx.Err(); err != nil {
		return nil, canceled(err)
	}
	s.warnings = nil
	res, err := st.run(ctx, s, args)
	if len(s.warnings) > 0 && err == nil && res != nil {
		res.Notices = append(s.warnings, res.Notices...)
	}
	if err != nil {
		s.Failed()
		if res != nil && res.Columns == nil {
			res = nil
		}
		if ctx.Err() != nil {
			// Whatever noticed the cancel, the client is told why.
			return res, canceled(ctx.Err())
		}
		return res, err
	}
	return res, nil
}

func (s *Session) addWarning(e *sqlstate.Error) { s.warnings = append(s.warnings, e) }

// Failed records that a statement failed: a transaction block is then
// aborted until it ends.
func (s *Session) Failed() {
	if s.tx == TxActive {
		s.tx = TxFailed
	}
}

func canceled(err error) *sqlstate.Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return sqlstate.Errorf(sqlstate.CodeQueryCanceled, "canceling statement due to statement timeout")
	}
	return sqlstate.Errorf(sqlstate.CodeQueryCanceled, "canceling statement due to user request")
}

// Canceled turns a context error into PostgreSQL's 57014.
func Canceled(err error) *sqlstate.Error { return canceled(err) }

func (s *Session) compile(ctx context.Context, text string, n *pg.Node, paramOIDs []uint32) (*Statement, error) {
	st := &Statement{SQL: text}
	switch x := n.Node.(type) {
	case *pg.Node_SelectStmt:
		return s.compileQuery(ctx, text, n, paramOIDs)
	case *pg.Node_VariableSetStmt:
		return s.compileSet(st, x.VariableSetStmt)
	case *pg.Node_VariableShowStmt:
		return s.compileShow(st, x.VariableShowStmt.Name)
	case *pg.Node_TransactionStmt:
		return s.compileTx(st, x.TransactionStmt)
	case *pg.Node_DiscardStmt:
		if x.DiscardStmt.Target != pg.DiscardMode_DISCARD_ALL {
			st.run = constTag("DISCARD " + strings.TrimPrefix(x.DiscardStmt.Target.String(), "DISCARD_"))
			return st, nil
		}
		st.kind = "DISCARD ALL"
		st.run = func(ctx context.Context, s *Session, _ []any) (*Result, error) {
			if s.tx != TxIdle {
				return nil, sqlstate.Errorf(sqlstate.CodeActiveTransaction, "DISCARD ALL cannot run inside a transaction block")
			}
			s.set = newSettings(s.opts.User, s.opts.Superuser)
			s.cursors = map[string]*cursor{}
			return &Result{Tag: "DISCARD ALL", DiscardAll: true}, nil
		}
		return st, nil
	case *pg.Node_CopyStmt:
		return s.compileCopy(ctx, st, x.CopyStmt)
	case *pg.Node_GrantStmt:
		return s.compileGrant(st, x.GrantStmt)
	case *pg.Node_DeclareCursorStmt:
		return s.compileDeclare(ctx, st, x.DeclareCursorStmt)
	case *pg.Node_FetchStmt:
		return s.compileFetch(st, x.FetchStmt)
	case *pg.Node_ClosePortalStmt:
		return s.compileClose(st, x.ClosePortalStmt.Portalname)
	case *pg.Node_UnlistenStmt:
		// A session cannot LISTEN (0A000), so it has no channel to leave;
		// connection pools send UNLISTEN * on every release.
		st.run = constTag("UNLISTEN")
		return st, nil
	case *pg.Node_DeallocateStmt:
		d := x.DeallocateStmt
		st.run = func(context.Context, *Session, []any) (*Result, error) {
			if d.Isall || d.Name == "" {
				return &Result{Tag: "DEALLOCATE ALL", DeallocateAll: true}, nil
			}
			return &Result{Tag: "DEALLOCATE", Deallocate: d.Name}, nil
		}
		return st, nil
	}
	name, plural := feature(n)
	verb := "is"
	if plural {
		verb = "are"
	}
	return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "%s %s not supported by cellar (docs/sql.md lists the statements it has)", name, verb)
}

// statementName names a statement kind for messages: "CREATE TABLE" from
// CreateStmt, and so on.
func statementName(n *pg.Node) string {
	name, _ := feature(n)
	return name
}

// feature names what a statement asks for, and whether the name is a
// plural.
func feature(n *pg.Node) (string, bool) {
	switch x := n.Node.(type) {
	case *pg.Node_CreateStmt:
		// CREATE TABLE itself is the dialect's (route.go); what comes
		// here is a kind of table it does not have.
		switch x.CreateStmt.GetRelation().GetRelpersistence() {
		case "t":
			return "temporary tables", true
		case "u":
			return "unlogged tables", true
		}
	case *pg.Node_CreateTableAsStmt:
		if x.CreateTableAsStmt.GetInto().GetRel().GetRelpersistence() == "t" {
			return "temporary tables", true
		}
		if x.CreateTableAsStmt.Objtype == pg.ObjectType_OBJECT_MATVIEW {
			return "materialized views", true
		}
		return "CREATE TABLE AS", false
	case *pg.Node_DoStmt:
		return "DO (anonymous code blocks)", false
	case *pg.Node_DropStmt:
		// DROP TABLE is the dialect's; this drops what it does not have.
		what := strings.TrimPrefix(x.DropStmt.RemoveType.String(), "OBJECT_")
		what = strings.ReplaceAll(strings.Replace(what, "MATVIEW", "MATERIALIZED_VIEW", 1), "_", " ")
		return "DROP " + what, false
	}
	name := fmt.Sprintf("%T", n.Node)
	name = strings.TrimPrefix(name, "*pg_query.Node_")
	name = strings.TrimSuffix(name, "Stmt")
	switch name {
	case "Create":
		return "CREATE TABLE", false
	case "Index":
		return "CREATE INDEX", false
	case "View":
		return "CREATE VIEW", false
	case "CreateRole", "AlterRole", "DropRole":
		return "roles (CREATE/ALTER/DROP ROLE; users are managed with cellar admin user)", true
	case "CreateEnum", "CompositeType", "CreateDomain", "CreateRange":
		return "CREATE TYPE and CREATE DOMAIN", true
	case "CreateSeq", "AlterSeq":
		return "sequences", true
	case "CreateFunction":
		return "CREATE FUNCTION", false
	case "CreateSchema":
		return "CREATE SCHEMA (tables live in public)", false
	case "Createdb", "Dropdb":
		return "CREATE/DROP DATABASE (a cluster has one database)", false
	case "Grant":
		return "GRANT and REVOKE", true
	case "Listen", "Notify":
		return "LISTEN and NOTIFY", true
	case "Vacuum":
		return "VACUUM and ANALYZE (compactions are automatic)", true
	case "Insert", "Update", "Delete", "Copy", "Explain", "Truncate", "Prepare", "Execute":
		return strings.ToUpper(name), false
	case "DeclareCursor":
		return "DECLARE CURSOR", false
	case "Fetch":
		return "FETCH", false
	case "ClosePortal":
		return "CLOSE", false
	}
	return "this statement (" + name + ")", false
}

func constTag(tag string) func(context.Context, *Session, []any) (*Result, error) {
	return func(context.Context, *Session, []any) (*Result, error) { return &Result{Tag: tag}, nil }
}

func (s *Session) compileTx(st *Statement, t *pg.TransactionStmt) (*Statement, error) {
	switch t.Kind {
	case pg.TransactionStmtKind_TRANS_STMT_BEGIN, pg.TransactionStmtKind_TRANS_STMT_START:
		tag := "BEGIN"
		if t.Kind == pg.TransactionStmtKind_TRANS_STMT_START {
			tag = "START TRANSACTION"
		}
		st.run = func(_ context.Context, s *Session, _ []any) (*Result, error) {
			res := &Result{Tag: tag}
			if s.tx != TxIdle {
				res.Notices = append(res.Notices, sqlstate.Notice("WARNING", sqlstate.CodeActiveTransaction, "there is already a transaction in progress"))
				return res, nil
			}
			s.beginTx()
			return res, nil
		}
	case pg.TransactionStmtKind_TRANS_STMT_COMMIT:
		st.endsTx = true
		chain := t.Chain
		st.run = func(ctx context.Context, s *Session, _ []any) (*Result, error) {
			switch {
			case s.tx == TxIdle && chain:
				return nil, sqlstate.Errorf(sqlstate.CodeNoActiveTransaction, "COMMIT AND CHAIN can only be used in transaction blocks")
			case s.tx == TxIdle:
				return &Result{Tag: "COMMIT", Notices: []*sqlstate.Error{sqlstate.Notice("WARNING", sqlstate.CodeNoActiveTransaction, "there is no transaction in progress")}}, nil
			case s.tx == TxFailed:
				s.endTx(false)
				if chain {
					s.beginTx()
				}
				return &Result{Tag: "ROLLBACK"}, nil
			}
			err := s.commitWrites(ctx)
			s.endTx(true)
			if err != nil {
				return nil, err // and no new transaction, as in PostgreSQL
			}
			if chain {
				s.beginTx()
			}
			return &Result{Tag: "COMMIT"}, nil
		}
	case pg.TransactionStmtKind_TRANS_STMT_ROLLBACK:
		st.endsTx = true
		chain := t.Chain
		st.run = func(_ context.Context, s *Session, _ []any) (*Result, error) {
			switch {
			case s.tx == TxIdle && chain:
				return nil, sqlstate.Errorf(sqlstate.CodeNoActiveTransaction, "ROLLBACK AND CHAIN can only be used in transaction blocks")
			case s.tx == TxIdle:
				return &Result{Tag: "ROLLBACK", Notices: []*sqlstate.Error{sqlstate.Notice("WARNING", sqlstate.CodeNoActiveTransaction, "there is no transaction in progress")}}, nil
			}
			s.endTx(false)
			if chain {
				s.beginTx()
			}
			return &Result{Tag: "ROLLBACK"}, nil
		}
	case pg.TransactionStmtKind_TRANS_STMT_SAVEPOINT:
		name := t.SavepointName
		st.run = func(_ context.Context, s *Session, _ []any) (*Result, error) {
			if s.tx == TxIdle {
				return nil, sqlstate.Errorf(sqlstate.CodeNoActiveTransaction, "SAVEPOINT can only be used in transaction blocks")
			}
			s.savepoints = append(s.savepoints, savepoint{name: name, set: s.set.clone(), writes: s.txw.clone()})
			return &Result{Tag: "SAVEPOINT"}, nil
		}
	case pg.TransactionStmtKind_TRANS_STMT_RELEASE, pg.TransactionStmtKind_TRANS_STMT_ROLLBACK_TO:
		name := t.SavepointName
		release := t.Kind == pg.TransactionStmtKind_TRANS_STMT_RELEASE
		st.endsTx = !release // ROLLBACK TO is allowed in a failed block
		st.run = func(_ context.Context, s *Session, _ []any) (*Result, error) {
			what := "ROLLBACK TO SAVEPOINT"
			if release {
				what = "RELEASE SAVEPOINT"
			}
			if s.tx == TxIdle {
				return nil, sqlstate.Errorf(sqlstate.CodeNoActiveTransaction, "%s can only be used in transaction blocks", what)
			}
			i := len(s.savepoints) - 1
			for i >= 0 && s.savepoints[i].name != name {
				i--
			}
			if i < 0 {
				return nil, sqlstate.Errorf("3B001", "savepoint %q does not exist", name)
			}
			if release {
				s.savepoints = s.savepoints[:i]
				return &Result{Tag: "RELEASE"}, nil
			}
			s.set = s.savepoints[i].set.clone()
			s.txw = s.savepoints[i].writes.clone()
			s.savepoints = s.savepoints[:i+1]
			s.tx = TxActive
			return &Result{Tag: "ROLLBACK"}, nil
		}
	default:
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "%s is not supported", strings.ReplaceAll(strings.TrimPrefix(t.Kind.String(), "TRANS_STMT_"), "_", " "))
	}
	return st, nil
}

// endTx ends a transaction block: a rollback restores the settings from
// its start, as PostgreSQL's SET is transactional.
// beginTx starts a transaction block.
func (s *Session) beginTx() {
	saved := s.set.clone()
	s.txSaved = &saved
	s.tx = TxActive
	s.txw, s.txStart = &txState{}, s.opts.Clock()
}

func (s *Session) endTx(commit bool) {
	if !commit && s.txSaved != nil {
		s.set = *s.txSaved
	}
	s.dropCursors(commit)
	s.savepoints = nil
	s.txSaved = nil
	s.tx = TxIdle
	s.txw = nil
}

func (s *Session) compileSet(st *Statement, v *pg.VariableSetStmt) (*Statement, error) {
	name := strings.ToLower(v.Name)
	switch v.Kind {
	case pg.VariableSetKind_VAR_RESET_ALL:
		st.run = func(_ context.Context, s *Session, _ []any) (*Result, error) {
			fresh := newSettings(s.opts.User, s.opts.Superuser)
			for k, cur := range s.set.byName {
				if !cur.readOnly {
					cur.value = fresh.byName[k].value
				}
			}
			return &Result{Tag: "RESET"}, nil
		}
		return st, nil
	case pg.VariableSetKind_VAR_RESET, pg.VariableSetKind_VAR_SET_DEFAULT:
		tag := "SET"
		if v.Kind == pg.VariableSetKind_VAR_RESET {
			tag = "RESET"
		}
		st.run = func(_ context.Context, s *Session, _ []any) (*Result, error) {
			cur, ok := s.set.byName[name]
			if !ok {
				return nil, unknownSetting(v.Name)
			}
			if cur.readOnly {
				return nil, sqlstate.Errorf(sqlstate.CodeCantChangeRuntimeParam, "parameter %q cannot be changed", cur.name)
			}
			cur.value = newSettings(s.opts.User, s.opts.Superuser).byName[name].value
			return &Result{Tag: tag}, nil
		}
		return st, nil
	case pg.VariableSetKind_VAR_SET_MULTI:
		// SET TRANSACTION / SET SESSION CHARACTERISTICS: isolation and
		// read-only modes; cellar's single-row atomicity does not change.
		st.run = constTag("SET")
		return st, nil
	case pg.VariableSetKind_VAR_SET_VALUE:
	default:
		return nil, sqlstate.Errorf(sqlstate.CodeFeatureNotSupported, "SET FROM CURRENT is not supported")
	}
	value, err := setArgs(v.Args)
	if err != nil {
		return nil, err
	}
	local := v.IsLocal
	st.run = func(_ context.Context, s *Session, _ []any) (*Result, error) {
		res := &Result{Tag: "SET"}
		if local && s.tx == TxIdle {
			res.Notices = append(res.Notices, sqlstate.Notice("WARNING", sqlstate.CodeNoActiveTransaction, "SET LOCAL can only be used in transaction blocks"))
			return res, nil
		}
		if err := s.setValue(name, value); err != nil {
			return nil, err
		}
		return res, nil
	}
	return st, nil
}

func unknownSetting(name string) *sqlstate.Error {
	return sqlstate.Errorf(sqlstate.CodeUndefinedObject, "unrecognized configuration parameter %q", name)
}

// setValue changes a setting. Names with a dot are custom settings, which
// PostgreSQL accepts without knowing them.
func (s *Session) setValue(name, value string) error {
	name = strings.ToLower(name)
	cur, ok := s.set.byName[name]
	if !ok {
		if !strings.Contains(name, ".") {
			return unknownSetting(name)
		}
		cur = &setting{name: name}
		s.set.byName[name] = cur
	}
	if cur.readOnly {
		return sqlstate.Errorf(sqlstate.CodeCantChangeRuntimeParam, "parameter %q cannot be changed", cur.name)
	}
	if cur.check != nil {
		v, err := cur.check(value)
		if err != nil {
			return err
		}
		value = v
	}
	cur.value = value
	return nil
}

// setArgs renders SET's arguments as PostgreSQL stores them: a list is
// joined with ", ".
func setArgs(args []*pg.Node) (string, error) {
	var parts []string
	for _, a := range args {
		switch x := a.Node.(type) {
		case *pg.Node_AConst:
			parts = append(parts, constText(x.AConst))
		case *pg.Node_TypeCast:
			if c, ok := x.TypeCast.Arg.Node.(*pg.Node_AConst); ok {
				parts = append(parts, constText(c.AConst))
				continue
			}
			return "", sqlstate.Errorf(sqlstate.CodeSyntaxError, "SET value must be a constant")
		default:
			return "", sqlstate.Errorf(sqlstate.CodeSyntaxError, "SET value must be a constant")
		}
	}
	return strings.Join(parts, ", "), nil
}

func constText(c *pg.A_Const) string {
	switch v := c.Val.(type) {
	case *pg.A_Const_Ival:
		return fmt.Sprint(v.Ival.Ival)
	case *pg.A_Const_Fval:
		return v.Fval.Fval
	case *pg.A_Const_Sval:
		return v.Sval.Sval
	case *pg.A_Const_Boolval:
		if v.Boolval.Boolval {
			return "on"
		}
		return "off"
	}
	return ""
}

func (s *Session) compileShow(st *Statement, name string) (*Statement, error) {
	lname := strings.ToLower(name)
	if lname == "all" {
		st.Columns = []pgtypes.Column{{Name: "name", OID: pgtypes.OIDText}, {Name: "setting", OID: pgtypes.OIDText}, {Name: "description", OID: pgtypes.OIDText}}
		st.run = func(_ context.Context, s *Session, _ []any) (*Result, error) {
			res := &Result{Columns: st.Columns}
			for _, k := range s.set.names() {
				v := s.set.byName[k]
				res.Rows = append(res.Rows, []any{v.name, v.value, v.desc})
			}
			res.Tag = "SHOW"
			return res, nil
		}
		return st, nil
	}
	if lname == "transaction isolation level" {
		lname = "transaction_isolation"
	}
	colName := lname
	if cur, ok := s.set.byName[lname]; ok {
		colName = cur.name
	}
	st.Columns = []pgtypes.Column{{Name: colName, OID: pgtypes.OIDText}}
	st.run = func(_ context.Context, s *Session, _ []any) (*Result, error) {
		cur, ok := s.set.byName[lname]
		if !ok {
			return nil, unknownSetting(name)
		}
		return &Result{Columns: st.Columns, Rows: [][]any{{cur.value}}, Tag: "SHOW"}, nil
	}
	return st, nil
}
