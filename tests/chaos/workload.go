package chaos

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/bigtable"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// The workloads' tables, made through SQL so that both doors share them
// (a Bigtable-shaped SQL table's TEXT and BIGINT cells are the bytes the
// Bigtable API reads and writes).
const (
	RegisterTable = "chaos_reg"
	SetTable      = "chaos_set"
	CounterTable  = "chaos_ctr"
)

// The workload streams: each workload through each door. A stream is
// available when its operations are answered.
const (
	StreamRegisterBT  = "register/bigtable"
	StreamRegisterSQL = "register/sql"
	StreamSetBT       = "set/bigtable"
	StreamSetSQL      = "set/sql"
	StreamCounterBT   = "counter/bigtable"
	StreamCounterSQL  = "counter/sql"
)

// Streams lists every workload stream.
func Streams() []string {
	return []string{StreamRegisterBT, StreamRegisterSQL, StreamSetBT, StreamSetSQL, StreamCounterBT, StreamCounterSQL}
}

// WorkloadOptions configure the clients. Zero fields get the defaults.
type WorkloadOptions struct {
	// Seed drives every client's choices.
	Seed uint64
	// RegisterRows is how many rows the register clients share at a time
	// (default 5); RowEpoch is how long they use them before moving on to
	// fresh ones (default 20s), which keeps each row's history small
	// enough for porcupine.
	RegisterRows int
	RowEpoch     time.Duration
	// Counters is the number of counter rows (default 2).
	Counters int
	// OpTimeout is each operation's deadline (default 3s).
	OpTimeout time.Duration
	// Think is the pause range between one client's operations (default
	// 25–50ms): 8 clients then issue roughly 100–200 operations a second.
	ThinkMin, ThinkMax time.Duration
}

func (o WorkloadOptions) withDefaults() WorkloadOptions {
	if o.RegisterRows <= 0 {
		o.RegisterRows = 5
	}
	if o.RowEpoch <= 0 {
		o.RowEpoch = 20 * time.Second
	}
	if o.Counters <= 0 {
		o.Counters = 2
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = 3 * time.Second
	}
	if o.ThinkMin <= 0 {
		o.ThinkMin = 25 * time.Millisecond
	}
	if o.ThinkMax <= o.ThinkMin {
		o.ThinkMax = 2 * o.ThinkMin
	}
	return o
}

// Workloads run the register, set and counter clients against a cluster
// and check what they saw.
type Workloads struct {
	c    *Cluster
	opts WorkloadOptions
	Rec  *Recorder

	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// set: every key an insert was attempted for, and the acknowledged ones.
	setAttempted, setAcked map[string]bool
	// counters: acknowledged and unknown increments per row.
	ctrAcked, ctrUnknown map[string]int
	errs                 []error
}

// NewWorkloads creates the workloads' tables through SQL.
func NewWorkloads(ctx context.Context, c *Cluster, opts WorkloadOptions) (*Workloads, error) {
	w := &Workloads{c: c, opts: opts.withDefaults(), Rec: NewRecorder(),
		setAttempted: map[string]bool{}, setAcked: map[string]bool{}, ctrAcked: map[string]int{}, ctrUnknown: map[string]int{}}
	conn, err := pgx.Connect(ctx, c.PGURL())
	if err != nil {
		return nil, fmt.Errorf("connect to the gateway: %w", err)
	}
	defer conn.Close(context.Background())
	stmts := []string{
		`CREATE TABLE ` + RegisterTable + ` (_key TEXT PRIMARY KEY, "f:v" TEXT)`,
		`CREATE TABLE ` + SetTable + ` (_key TEXT PRIMARY KEY, "f:v" TEXT)`,
		`CREATE TABLE ` + CounterTable + ` (_key TEXT PRIMARY KEY, "c:n" BIGINT)`,
	}
	for i := range w.opts.Counters {
		stmts = append(stmts, fmt.Sprintf(`UPSERT INTO %s (_key, "c:n") VALUES ('c%d', 0)`, CounterTable, i))
	}
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return nil, fmt.Errorf("%s: %w", s, err)
		}
	}
	return w, nil
}

// RegisterRow is the register row i of the current epoch.
func (w *Workloads) RegisterRow(i int) string {
	epoch := int(time.Since(w.Rec.start) / w.opts.RowEpoch)
	return fmt.Sprintf("r%04d-%d", epoch, i%w.opts.RegisterRows)
}

// Start starts the eight clients: two per door on the register, one per
// door on the set and on the counters.
func (w *Workloads) Start(ctx context.Context) {
	ctx, w.cancel = context.WithCancel(ctx)
	type client struct {
		stream string
		run    func(ctx context.Context, id int, r *rand.Rand, door door)
	}
	clients := []client{
		{StreamRegisterBT, w.register}, {StreamRegisterBT, w.register},
		{StreamRegisterSQL, w.register}, {StreamRegisterSQL, w.register},
		{StreamSetBT, w.set}, {StreamSetSQL, w.set},
		{StreamCounterBT, w.counter}, {StreamCounterSQL, w.counter},
	}
	for id, cl := range clients {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			r := rand.New(rand.NewPCG(w.opts.Seed, uint64(id)))
			d, err := w.newDoor(ctx, cl.stream)
			if err != nil {
				w.fail(fmt.Errorf("client %d (%s): %w", id, cl.stream, err))
				return
			}
			defer d.close()
			cl.run(ctx, id, r, d)
		}()
	}
}

// Stop stops the clients and waits for them.
func (w *Workloads) Stop() {
	if w.cancel != nil {
		w.cancel()
	}
	w.wg.Wait()
}

func (w *Workloads) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, err)
}

// Errors are the clients' own failures (not the cluster's answers).
func (w *Workloads) Errors() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.errs...)
}

func (w *Workloads) think(ctx context.Context, r *rand.Rand) {
	d := w.opts.ThinkMin + time.Duration(r.Int64N(int64(w.opts.ThinkMax-w.opts.ThinkMin)))
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// door is one client's connection: a Bigtable client or a SQL
// connection, made again after a failure.
type door struct {
	stream string
	sql    bool
	url    string
	conn   *pgx.Conn // nil until connected, and after a failure
	bt     *bigtable.Client
	cc     *grpc.ClientConn
}

func (w *Workloads) newDoor(ctx context.Context, stream string) (door, error) {
	d := door{stream: stream, sql: strings.HasSuffix(stream, "/sql"), url: w.c.PGURL()}
	if d.sql {
		return d, nil
	}
	// gRPC reconnects by itself when the gateway comes back on its port.
	cc, err := grpc.NewClient("passthrough:///"+w.c.Bigtable, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return d, fmt.Errorf("dial the Bigtable API: %w", err)
	}
	bt, err := bigtable.NewClientWithConfig(ctx, "chaos", "chaos",
		bigtable.ClientConfig{MetricsProvider: bigtable.NoopMetricsProvider{}}, option.WithGRPCConn(cc))
	if err != nil {
		cc.Close()
		return d, fmt.Errorf("bigtable client: %w", err)
	}
	d.bt, d.cc = bt, cc
	return d, nil
}

func (d *door) close() {
	if d.conn != nil {
		d.conn.Close(context.Background())
	}
	if d.bt != nil {
		d.bt.Close()
		d.cc.Close()
	}
}

// sqlConn returns the connection, connecting if needed. A failure to
// connect is a definite failure of the operation that wanted it: nothing
// was sent.
func (d *door) sqlConn(ctx context.Context) (*pgx.Conn, error) {
	if d.conn != nil && !d.conn.IsClosed() {
		return d.conn, nil
	}
	conn, err := pgx.Connect(ctx, d.url)
	if err != nil {
		return nil, err
	}
	d.conn = conn
	return conn, nil
}

// sqlExec runs one statement, connecting if needed, and classifies its
// outcome: Failed if it could not connect (nothing was sent), else as
// sqlOutcome says.
func (d *door) sqlExec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, Outcome, error) {
	conn, err := d.sqlConn(ctx)
	if err != nil {
		return pgconn.CommandTag{}, Failed, err
	}
	tag, err := conn.Exec(ctx, sql, args...)
	d.sqlDone(err)
	return tag, sqlOutcome(err), err
}

// sqlDone drops the connection after an error that may have left it
// unusable (anything but a server's error answer).
func (d *door) sqlDone(err error) {
	var pe *pgconn.PgError
	if err != nil && !errors.As(err, &pe) && d.conn != nil {
		d.conn.Close(context.Background())
		d.conn = nil
	}
}

// sqlOutcome classifies a write's SQL error. The server's answers that
// say nothing was written are definite; 08007 (the tablet server went
// away after the request was sent), cancellations, internal errors and a
// lost connection are unknown.
func sqlOutcome(err error) Outcome {
	if err == nil {
		return OK
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return Unknown
	}
	switch {
	case strings.HasPrefix(pe.Code, "08"), pe.Code == "57014", pe.Code == "57P03", strings.HasPrefix(pe.Code, "53"),
		strings.HasPrefix(pe.Code, "XX"), strings.HasPrefix(pe.Code, "58"):
		return Unknown
	}
	return Failed
}

// btOutcome classifies a write's Bigtable API error: the codes that say
// the request was refused are definite, the rest (Unavailable, deadline,
// Internal, a lost connection) unknown.
func btOutcome(err error) Outcome {
	if err == nil {
		return OK
	}
	switch status.Code(err) {
	case codes.InvalidArgument, codes.NotFound, codes.AlreadyExists, codes.PermissionDenied,
		codes.FailedPrecondition, codes.OutOfRange, codes.Unimplemented, codes.Unauthenticated:
		return Failed
	}
	return Unknown
}

// register runs one register client: reads, writes and compare-and-swaps
// on the current epoch's rows.
func (w *Workloads) register(ctx context.Context, id int, r *rand.Rand, d door) {
	lastRead := map[string]string{}
	doorName := "bigtable"
	if d.sql {
		doorName = "sql"
	}
	for n := 0; ctx.Err() == nil; n++ {
		row := w.RegisterRow(r.IntN(w.opts.RegisterRows))
		value := fmt.Sprintf("c%d-%d", id, n)
		opCtx, cancel := context.WithTimeout(ctx, w.opts.OpTimeout)
		call := time.Now()
		var in RegisterInput
		var out RegisterOutput
		var o Outcome
		switch k := r.IntN(10); {
		case k < 4:
			in = RegisterInput{Op: "read", Door: doorName}
			out.Value, o = w.regRead(opCtx, &d, row)
		case k < 7:
			in = RegisterInput{Op: "write", Value: value, Door: doorName}
			o = w.regWrite(opCtx, &d, row, value)
		default:
			in = RegisterInput{Op: "cas", Value: value, Expected: lastRead[row], Door: doorName}
			out.Swapped, o = w.regCAS(opCtx, &d, row, in.Expected, value)
		}
		cancel()
		if ctx.Err() != nil && o != OK {
			// Cut short by the end of the run, not by the cluster; an
			// unknown write still counts in the history below.
			if in.Op == "read" {
				return
			}
		}
		w.Rec.Op(d.stream, call, o)
		switch {
		case in.Op == "read" && o == OK:
			lastRead[row] = out.Value
			w.Rec.Register(id, row, call, in, out)
		case in.Op == "read":
			// A failed read tells nothing.
		case o == Unknown:
			out.Unknown = true
			w.Rec.Register(id, row, call, in, out)
		case o == OK:
			w.Rec.Register(id, row, call, in, out)
		}
		w.think(ctx, r)
	}
}

func (w *Workloads) regRead(ctx context.Context, d *door, row string) (string, Outcome) {
	if !d.sql {
		got, err := d.bt.Open(RegisterTable).ReadRow(ctx, row, bigtable.RowFilter(bigtable.ChainFilters(
			bigtable.FamilyFilter("f"), bigtable.ColumnFilter("v"), bigtable.LatestNFilter(1))))
		if err != nil {
			return "", Failed
		}
		for _, it := range got["f"] {
			return string(it.Value), OK
		}
		return "", OK
	}
	conn, err := d.sqlConn(ctx)
	if err != nil {
		return "", Failed
	}
	var v *string
	err = conn.QueryRow(ctx, `SELECT "f:v" FROM `+RegisterTable+` WHERE _key = $1`, row).Scan(&v)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return "", OK
	case err != nil:
		d.sqlDone(err)
		return "", Failed
	case v == nil:
		return "", OK
	}
	return *v, OK
}

func (w *Workloads) regWrite(ctx context.Context, d *door, row, value string) Outcome {
	if !d.sql {
		m := bigtable.NewMutation()
		m.Set("f", "v", bigtable.ServerTime, []byte(value))
		return btOutcome(d.bt.Open(RegisterTable).Apply(ctx, row, m))
	}
	_, o, _ := d.sqlExec(ctx, `UPSERT INTO `+RegisterTable+` (_key, "f:v") VALUES ($1, $2)`, row, value)
	return o
}

// regCAS swaps the row's value from expected to value. Through SQL, from
// the empty register it is an INSERT (23505: the row exists), else an
// UPDATE whose WHERE names the old value (UPDATE 0: it differs).
func (w *Workloads) regCAS(ctx context.Context, d *door, row, expected, value string) (bool, Outcome) {
	if !d.sql {
		set := bigtable.NewMutation()
		set.Set("f", "v", bigtable.ServerTime, []byte(value))
		var cond *bigtable.Mutation
		if expected == "" {
			// The empty register: the row has no f:v cell.
			cond = bigtable.NewCondMutation(bigtable.ChainFilters(bigtable.FamilyFilter("f"), bigtable.ColumnFilter("v")), nil, set)
		} else {
			cond = bigtable.NewCondMutation(bigtable.ChainFilters(bigtable.FamilyFilter("f"), bigtable.ColumnFilter("v"),
				bigtable.LatestNFilter(1), bigtable.ValueFilter("^"+regexp.QuoteMeta(expected)+"$")), set, nil)
		}
		var matched bool
		err := d.bt.Open(RegisterTable).Apply(ctx, row, cond, bigtable.GetCondMutationResult(&matched))
		return matched == (expected != ""), btOutcome(err)
	}
	if expected == "" {
		_, o, err := d.sqlExec(ctx, `INSERT INTO `+RegisterTable+` (_key, "f:v") VALUES ($1, $2)`, row, value)
		var pe *pgconn.PgError
		if errors.As(err, &pe) && pe.Code == "23505" {
			return false, OK
		}
		return err == nil, o
	}
	tag, o, err := d.sqlExec(ctx, `UPDATE `+RegisterTable+` SET "f:v" = $1 WHERE _key = $2 AND "f:v" = $3`, value, row, expected)
	if err != nil {
		return false, o
	}
	return tag.RowsAffected() == 1, OK
}

// set runs one set client: inserts of keys no other insert uses.
func (w *Workloads) set(ctx context.Context, id int, r *rand.Rand, d door) {
	for n := 0; ctx.Err() == nil; n++ {
		key := fmt.Sprintf("s%d-%06d", id, n)
		opCtx, cancel := context.WithTimeout(ctx, w.opts.OpTimeout)
		call := time.Now()
		var o Outcome
		if d.sql {
			var err error
			_, o, err = d.sqlExec(opCtx, `INSERT INTO `+SetTable+` (_key, "f:v") VALUES ($1, $2)`, key, key)
			var pe *pgconn.PgError
			if errors.As(err, &pe) && pe.Code == "23505" {
				// The key is this insert's alone: the row cannot
				// exist unless something else wrote it.
				w.fail(fmt.Errorf("set: INSERT of the fresh key %s found it present: %w", key, err))
			}
		} else {
			m := bigtable.NewMutation()
			m.Set("f", "v", bigtable.ServerTime, []byte(key))
			o = btOutcome(d.bt.Open(SetTable).Apply(opCtx, key, m))
		}
		cancel()
		w.Rec.Op(d.stream, call, o)
		w.mu.Lock()
		if o != Failed {
			w.setAttempted[key] = true
		}
		if o == OK {
			w.setAcked[key] = true
		}
		w.mu.Unlock()
		w.think(ctx, r)
	}
}

// counter runs one counter client: increments of a random counter.
func (w *Workloads) counter(ctx context.Context, id int, r *rand.Rand, d door) {
	for ctx.Err() == nil {
		row := fmt.Sprintf("c%d", r.IntN(w.opts.Counters))
		opCtx, cancel := context.WithTimeout(ctx, w.opts.OpTimeout)
		call := time.Now()
		var o Outcome
		if d.sql {
			var tag pgconn.CommandTag
			var err error
			tag, o, err = d.sqlExec(opCtx, `UPDATE `+CounterTable+` SET "c:n" = "c:n" + 1 WHERE _key = $1`, row)
			if err == nil && tag.RowsAffected() != 1 {
				w.fail(fmt.Errorf("counter: UPDATE of %s reported %s", row, tag))
				o = Failed
			}
		} else {
			rmw := bigtable.NewReadModifyWrite()
			rmw.Increment("c", "n", 1)
			_, err := d.bt.Open(CounterTable).ApplyReadModifyWrite(opCtx, row, rmw)
			o = btOutcome(err)
		}
		cancel()
		w.Rec.Op(d.stream, call, o)
		w.mu.Lock()
		switch o {
		case OK:
			w.ctrAcked[row]++
		case Unknown:
			w.ctrUnknown[row]++
		}
		w.mu.Unlock()
		w.think(ctx, r)
	}
}

// SetResult is the set workload's final check.
type SetResult struct {
	Acked, Attempted, Present int
	// Lost are acknowledged keys missing from the final read; Phantom are
	// keys present that no insert attempted.
	Lost, Phantom []string
}

// CounterResult is one counter's final check.
type CounterResult struct {
	Row                    string
	Acked, Unknown, Final  int64
	OK                     bool
	ReadThroughBigtableAPI int64
}

// CheckSet reads the set table through SQL and through the Bigtable API
// and compares both with what the clients did. Call it after Stop.
func (w *Workloads) CheckSet(ctx context.Context) (SetResult, error) {
	var res SetResult
	present := map[string]bool{}
	err := retry(ctx, func(ctx context.Context) error {
		clear(present)
		conn, err := pgx.Connect(ctx, w.c.PGURL())
		if err != nil {
			return err
		}
		defer conn.Close(context.Background())
		rows, err := conn.Query(ctx, `SELECT _key FROM `+SetTable)
		if err != nil {
			return err
		}
		for rows.Next() {
			var k string
			if err := rows.Scan(&k); err != nil {
				return err
			}
			present[k] = true
		}
		return rows.Err()
	})
	if err != nil {
		return res, fmt.Errorf("read %s through SQL: %w", SetTable, err)
	}
	viaBT := map[string]bool{}
	err = retry(ctx, func(ctx context.Context) error {
		clear(viaBT)
		d, err := w.newDoor(ctx, StreamSetBT)
		if err != nil {
			return err
		}
		defer d.close()
		return d.bt.Open(SetTable).ReadRows(ctx, bigtable.InfiniteRange(""), func(r bigtable.Row) bool {
			viaBT[r.Key()] = true
			return true
		}, bigtable.RowFilter(bigtable.FamilyFilter("f")))
	})
	if err != nil {
		return res, fmt.Errorf("read %s through the Bigtable API: %w", SetTable, err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	res.Acked, res.Attempted, res.Present = len(w.setAcked), len(w.setAttempted), len(present)
	for k := range w.setAcked {
		if !present[k] || !viaBT[k] {
			res.Lost = append(res.Lost, k)
		}
	}
	for k := range present {
		if !w.setAttempted[k] {
			res.Phantom = append(res.Phantom, k)
		}
	}
	for k := range viaBT {
		if !w.setAttempted[k] {
			res.Phantom = append(res.Phantom, k+" (Bigtable API)")
		}
	}
	sort.Strings(res.Lost)
	sort.Strings(res.Phantom)
	return res, nil
}

// CheckCounters reads every counter through SQL and the Bigtable API.
// Call it after Stop.
func (w *Workloads) CheckCounters(ctx context.Context) ([]CounterResult, error) {
	var out []CounterResult
	for i := range w.opts.Counters {
		row := fmt.Sprintf("c%d", i)
		var final, viaBT int64
		err := retry(ctx, func(ctx context.Context) error {
			conn, err := pgx.Connect(ctx, w.c.PGURL())
			if err != nil {
				return err
			}
			defer conn.Close(context.Background())
			return conn.QueryRow(ctx, `SELECT "c:n" FROM `+CounterTable+` WHERE _key = $1`, row).Scan(&final)
		})
		if err != nil {
			return nil, fmt.Errorf("read counter %s: %w", row, err)
		}
		err = retry(ctx, func(ctx context.Context) error {
			d, err := w.newDoor(ctx, StreamCounterBT)
			if err != nil {
				return err
			}
			defer d.close()
			r, err := d.bt.Open(CounterTable).ReadRow(ctx, row, bigtable.RowFilter(bigtable.ChainFilters(
				bigtable.FamilyFilter("c"), bigtable.ColumnFilter("n"), bigtable.LatestNFilter(1))))
			if err != nil {
				return err
			}
			for _, it := range r["c"] {
				if len(it.Value) != 8 {
					return fmt.Errorf("counter %s holds %d bytes, not 8", row, len(it.Value))
				}
				for _, b := range it.Value {
					viaBT = viaBT<<8 | int64(b)
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read counter %s through the Bigtable API: %w", row, err)
		}
		w.mu.Lock()
		acked, unknown := int64(w.ctrAcked[row]), int64(w.ctrUnknown[row])
		w.mu.Unlock()
		out = append(out, CounterResult{Row: row, Acked: acked, Unknown: unknown, Final: final, ReadThroughBigtableAPI: viaBT,
			OK: final >= acked && final <= acked+unknown && viaBT == final})
	}
	return out, nil
}

// retry runs f until it succeeds, with a fresh 10s deadline each time,
// for up to a minute: the final reads come after the faults heal, but a
// tablet may still be moving.
func retry(ctx context.Context, f func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var err error
	for {
		actx, acancel := context.WithTimeout(ctx, 10*time.Second)
		err = f(actx)
		acancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
