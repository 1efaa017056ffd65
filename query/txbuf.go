package query

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/cellardb/cellar/kv/model"
	"github.com/cellardb/cellar/query/sqlstate"
)

// Transactions (DESIGN.md section 5): inside BEGIN … COMMIT, writes are
// buffered in the session and applied at COMMIT, each row atomically, as
// Phoenix does; reads in the transaction see them (tableRows overlays
// them). An INSERT's check that its row is new is made at the statement
// and again at COMMIT, where the row's mutation becomes a check-and-mutate.

// txState is the open transaction's buffered writes, by table.
type txState struct {
	tables map[string]*tableWrites
	order  []string
}

// tableWrites are one table's buffered rows.
type tableWrites struct {
	rows map[string]*bufferedRow
	keys []string // in the order first written
}

type bufferedRow struct {
	muts []model.Mutation
	// insert: the row must not exist at COMMIT (an INSERT made it).
	insert bool
	// expects: what an UPDATE or DELETE read of the row, which must still
	// hold at COMMIT (optimistic concurrency; 40001 if not).
	expects []model.Expect
	// mustExist: an UPDATE or DELETE found the row, and it must still
	// exist at COMMIT.
	mustExist bool
}

// clone copies the buffered writes (a savepoint's view of them).
func (tx *txState) clone() *txState {
	if tx == nil {
		return nil
	}
	out := &txState{tables: map[string]*tableWrites{}, order: append([]string(nil), tx.order...)}
	for name, tw := range tx.tables {
		c := &tableWrites{rows: map[string]*bufferedRow{}, keys: append([]string(nil), tw.keys...)}
		for k, br := range tw.rows {
			b := *br
			b.muts = append([]model.Mutation(nil), br.muts...)
			b.expects = append([]model.Expect(nil), br.expects...)
			c.rows[k] = &b
		}
		out.tables[name] = c
	}
	return out
}

func (tx *txState) writes(table string) *tableWrites {
	if tx == nil {
		return nil
	}
	return tx.tables[table]
}

func (tx *txState) add(table string, key []byte, muts []model.Mutation, insert bool) *bufferedRow {
	if tx.tables == nil {
		tx.tables = map[string]*tableWrites{}
	}
	tw := tx.tables[table]
	if tw == nil {
		tw = &tableWrites{rows: map[string]*bufferedRow{}}
		tx.tables[table] = tw
		tx.order = append(tx.order, table)
	}
	br := tw.rows[string(key)]
	if br == nil {
		br = &bufferedRow{insert: insert}
		tw.rows[string(key)] = br
		tw.keys = append(tw.keys, string(key))
	}
	br.muts = append(br.muts, muts...)
	return br
}

// has reports whether the transaction already wrote a row.
func (tx *txState) has(table string, key []byte) bool {
	tw := tx.writes(table)
	return tw != nil && tw.rows[string(key)] != nil
}

// keysIn returns the buffered keys in rng, sorted.
func (tw *tableWrites) keysIn(rng model.RowRange) []string {
	if tw == nil {
		return nil
	}
	var out []string
	for _, k := range tw.keys {
		if rng.Contains([]byte(k)) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// overlay applies the buffered mutations of row's key to its cells.
func (tw *tableWrites) overlay(row model.Row) model.Row {
	if tw == nil {
		return row
	}
	br := tw.rows[string(row.Key)]
	if br == nil {
		return row
	}
	return model.Row{Key: row.Key, Cells: applyMutations(row.Cells, br.muts)}
}

// applyMutations is what a row's newest cells look like after muts: a set
// cell becomes its column's newest version (timestamps do not matter to a
// read of the newest version), and deletions remove what they cover.
func applyMutations(cells []model.Cell, muts []model.Mutation) []model.Cell {
	out := append([]model.Cell(nil), cells...)
	for _, m := range muts {
		keep := out[:0]
		for _, c := range out {
			covered := false
			switch m.Kind {
			case model.KindDeleteRow:
				covered = true
			case model.KindDeleteFamily:
				covered = c.Family == m.Family
			case model.KindDeleteColumn, model.KindSetCell:
				covered = c.Family == m.Family && bytes.Equal(c.Qualifier, m.Qualifier)
			}
			if !covered {
				keep = append(keep, c)
			}
		}
		out = keep
		if m.Kind == model.KindSetCell {
			out = append(out, model.Cell{Family: m.Family, Qualifier: m.Qualifier, Timestamp: m.Timestamp, Value: m.Value})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Family != out[j].Family {
			return out[i].Family < out[j].Family
		}
		return bytes.Compare(out[i].Qualifier, out[j].Qualifier) < 0
	})
	return out
}

// commitWrites applies a transaction's buffered rows, each atomically, in
// the order first written. Rows are independent: if one fails, the ones
// before it stay applied, and the error says which.
func (s *Session) commitWrites(ctx context.Context) error {
	tx := s.txw
	if tx == nil {
		return nil
	}
	kv := s.kv()
	total := 0
	for _, tw := range tx.tables {
		total += len(tw.keys)
	}
	var applied []string
	for _, table := range tx.order {
		tw := tx.tables[table]
		for _, k := range tw.keys {
			br, key := tw.rows[k], []byte(k)
			var err error
			switch {
			case br.insert:
				var exists bool
				if exists, err = kv.CompareAndMutate(ctx, table, key, nil, nil, br.muts); err == nil && exists {
					e := sqlstate.Errorf(codeUniqueViolation, "duplicate key value violates unique constraint \"%s_pkey\"", table)
					e.Schema, e.Table, e.Constraint = "public", table, table+"_pkey"
					err = e
				}
			case br.mustExist || len(br.expects) > 0:
				var held bool
				if held, err = kv.CompareAndMutate(ctx, table, key, br.expects, br.muts, nil); err == nil && !held {
					err = sqlstate.Errorf(codeSerializationFailure, "could not serialize access due to concurrent update of row %q of %q", k, table)
				}
			default:
				err = kv.Apply(ctx, table, &model.RowMutation{Row: key, Mutations: br.muts})
			}
			if err != nil {
				e := *sqlstate.AsError(kvError(err, true))
				e.Detail = commitDetail(applied, total)
				return &e
			}
			applied = append(applied, fmt.Sprintf("%s %q", table, k))
		}
	}
	return nil
}

func commitDetail(applied []string, total int) string {
	if len(applied) == 0 {
		return fmt.Sprintf("COMMIT applied none of the transaction's %d rows.", total)
	}
	list := applied
	more := ""
	if len(list) > 20 {
		list, more = list[:20], fmt.Sprintf(" and %d more", len(applied)-20)
	}
	return fmt.Sprintf("COMMIT applied %d of the transaction's %d rows, each atomically: %s%s.", len(applied), total, strings.Join(list, ", "), more)
}
