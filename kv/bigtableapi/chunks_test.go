package bigtableapi

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
	"github.com/cockroachdb/datadriven"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/cellardb/cellar/kv/model"
)

// TestChunksDataDriven runs testdata/chunks. Rows are written as
//
//	row KEY
//	FAMILY:QUALIFIER@TS "VALUE" [label=L]
//
// Commands:
//
//	encode [max-value=N]    prints each row's CellChunks, one per line,
//	                        fields only where set, then checks that the
//	                        clients' chunk state machine (decodeChunks)
//	                        rebuilds exactly the rows given
//	respond max-bytes=N     prints the keys of the rows each ReadRows
//	                        response carries
func TestChunksDataDriven(t *testing.T) {
	datadriven.RunTest(t, "testdata/chunks", func(t *testing.T, d *datadriven.TestData) string {
		rows := parseRows(t, d.Input)
		switch d.Cmd {
		case "encode":
			maxValue := 0
			if d.HasArg("max-value") {
				d.ScanArgs(t, "max-value", &maxValue)
			}
			var chunks []*btpb.ReadRowsResponse_CellChunk
			for _, r := range rows {
				chunks, _ = appendRowChunks(chunks, r, maxValue)
			}
			out := renderChunks(chunks)
			got, err := decodeChunks(chunks)
			switch {
			case err != nil:
				out += "decode: " + err.Error() + "\n"
			case fmt.Sprint(got) != fmt.Sprint(nonEmpty(rows)):
				out += fmt.Sprintf("decode: got %v\n", got)
			}
			return out
		case "respond":
			var maxBytes int
			d.ScanArgs(t, "max-bytes", &maxBytes)
			st := &fakeReadRows{}
			w := &rowWriter{stream: st, maxBytes: maxBytes}
			for _, r := range rows {
				if err := w.add(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.flush(); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			for _, resp := range st.sent {
				rows, err := decodeChunks(resp.Chunks)
				if err != nil {
					t.Fatalf("a response does not hold whole rows: %v", err)
				}
				var keys []string
				for _, r := range rows {
					keys = append(keys, string(r.Key))
				}
				fmt.Fprintf(&out, "response: %s\n", strings.Join(keys, " "))
			}
			fmt.Fprintf(&out, "rows=%d cells=%d\n", w.rows, w.cells)
			return out.String()
		}
		t.Fatalf("unknown command %q", d.Cmd)
		return ""
	})
}

type fakeReadRows struct {
	grpc.ServerStream
	sent []*btpb.ReadRowsResponse
}

func (f *fakeReadRows) Send(r *btpb.ReadRowsResponse) error {
	f.sent = append(f.sent, r)
	return nil
}

func parseRows(t *testing.T, input string) []model.Row {
	var rows []model.Row
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		if key, ok := strings.CutPrefix(line, "row "); ok {
			rows = append(rows, model.Row{Key: []byte(key)})
			continue
		}
		col, rest, _ := strings.Cut(line, " ")
		fam, qt, _ := strings.Cut(col, ":")
		qual, tsText, _ := strings.Cut(qt, "@")
		ts, err := strconv.ParseInt(tsText, 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		quoted, err := strconv.QuotedPrefix(rest)
		if err != nil {
			t.Fatalf("%s: %v", line, err)
		}
		value, _ := strconv.Unquote(quoted)
		r := &rows[len(rows)-1]
		r.Cells = append(r.Cells, model.Cell{Family: fam, Qualifier: []byte(qual), Timestamp: ts, Value: []byte(value)})
		var labels []string
		if l, ok := strings.CutPrefix(strings.TrimSpace(rest[len(quoted):]), "label="); ok {
			labels = []string{l}
		}
		if labels != nil && r.Labels == nil {
			r.Labels = make([][]string, len(r.Cells)-1)
		}
		if r.Labels != nil {
			r.Labels = append(r.Labels, labels)
		}
	}
	return rows
}

func nonEmpty(rows []model.Row) []model.Row {
	var out []model.Row
	for _, r := range rows {
		if len(r.Cells) > 0 {
			if r.Labels != nil {
				for i := range r.Labels {
					if len(r.Labels[i]) == 0 {
						r.Labels[i] = nil
					}
				}
			}
			out = append(out, r)
		}
	}
	return out
}

// renderChunks prints chunks one per line with the fields they set; ts is
// shown for every chunk that starts a cell.
func renderChunks(chunks []*btpb.ReadRowsResponse_CellChunk) string {
	var b strings.Builder
	inCell := false
	for _, c := range chunks {
		var f []string
		if c.RowKey != nil {
			f = append(f, fmt.Sprintf("row_key=%q", c.RowKey))
		}
		if c.FamilyName != nil {
			f = append(f, fmt.Sprintf("family=%q", c.FamilyName.Value))
		}
		if c.Qualifier != nil {
			f = append(f, fmt.Sprintf("qualifier=%q", c.Qualifier.Value))
		}
		if !inCell {
			f = append(f, fmt.Sprintf("ts=%d", c.TimestampMicros))
		}
		if len(c.Labels) > 0 {
			f = append(f, "labels="+strings.Join(c.Labels, ","))
		}
		if c.ValueSize > 0 {
			f = append(f, fmt.Sprintf("value_size=%d", c.ValueSize))
		}
		f = append(f, fmt.Sprintf("value=%q", c.Value))
		if c.GetCommitRow() {
			f = append(f, "commit")
		}
		inCell = c.ValueSize > 0
		fmt.Fprintln(&b, strings.Join(f, " "))
	}
	return b.String()
}

// decodeChunks rebuilds rows from chunks with the rules of the clients'
// chunk state machine (cloud.google.com/go/bigtable's reader.go): a new
// row names its key, family and qualifier; a family comes with a
// qualifier; the pieces of a split value carry nothing else; a row ends
// with commit_row, never inside a value; and the stream ends between
// rows.
func decodeChunks(chunks []*btpb.ReadRowsResponse_CellChunk) ([]model.Row, error) {
	var rows []model.Row
	var cur *model.Row
	var fam string
	var qual []byte
	var val []byte
	var labels []string
	inCell := false
	for i, c := range chunks {
		switch {
		case inCell:
			if c.RowKey != nil || c.FamilyName != nil || c.Qualifier != nil || c.TimestampMicros != 0 {
				return nil, fmt.Errorf("chunk %d: key fields inside a split cell", i)
			}
		case cur == nil:
			if c.RowKey == nil || c.FamilyName == nil || c.Qualifier == nil {
				return nil, fmt.Errorf("chunk %d: a new row without its key, family and qualifier", i)
			}
			if len(rows) > 0 && bytes.Compare(c.RowKey, rows[len(rows)-1].Key) <= 0 {
				return nil, fmt.Errorf("chunk %d: row key %q does not increase", i, c.RowKey)
			}
			cur = &model.Row{Key: c.RowKey}
		default:
			if c.RowKey != nil && !bytes.Equal(c.RowKey, cur.Key) {
				return nil, fmt.Errorf("chunk %d: another row key inside row %q", i, cur.Key)
			}
			if c.FamilyName != nil && c.Qualifier == nil {
				return nil, fmt.Errorf("chunk %d: a family without a qualifier", i)
			}
		}
		if !inCell {
			if c.FamilyName != nil {
				fam = c.FamilyName.Value
			}
			if c.Qualifier != nil {
				qual = c.Qualifier.Value
			}
			labels = c.Labels
			cur.Cells = append(cur.Cells, model.Cell{Family: fam, Qualifier: qual, Timestamp: c.TimestampMicros})
			val = nil
		}
		val = append(val, c.Value...)
		if c.ValueSize > 0 {
			if c.GetCommitRow() {
				return nil, fmt.Errorf("chunk %d: commit inside a split cell", i)
			}
			inCell = true
			continue
		}
		inCell = false
		last := &cur.Cells[len(cur.Cells)-1]
		last.Value = val
		if labels != nil && cur.Labels == nil {
			cur.Labels = make([][]string, len(cur.Cells)-1)
		}
		if cur.Labels != nil {
			cur.Labels = append(cur.Labels, labels)
		}
		if c.GetCommitRow() {
			rows = append(rows, *cur)
			cur = nil
		}
	}
	if cur != nil || inCell {
		return nil, fmt.Errorf("the chunks end inside a row")
	}
	return rows, nil
}

// TestDecodeChunksRejects checks that decodeChunks, the oracle of the
// encoding test, refuses what the clients refuse.
func TestDecodeChunksRejects(t *testing.T) {
	str := func(s string) *wrapperspb.StringValue { return wrapperspb.String(s) }
	qual := func(s string) *wrapperspb.BytesValue { return wrapperspb.Bytes([]byte(s)) }
	commit := &btpb.ReadRowsResponse_CellChunk_CommitRow{CommitRow: true}
	for name, chunks := range map[string][]*btpb.ReadRowsResponse_CellChunk{
		"no family in a new row": {{RowKey: []byte("r"), Qualifier: qual("a"), RowStatus: commit}},
		"family without qualifier": {{RowKey: []byte("r"), FamilyName: str("f"), Qualifier: qual("a")},
			{FamilyName: str("g"), RowStatus: commit}},
		"timestamp in a split cell": {{RowKey: []byte("r"), FamilyName: str("f"), Qualifier: qual("a"), ValueSize: 2, Value: []byte("a")},
			{TimestampMicros: 5, Value: []byte("b"), RowStatus: commit}},
		"commit inside a split cell": {{RowKey: []byte("r"), FamilyName: str("f"), Qualifier: qual("a"), ValueSize: 2, Value: []byte("a"), RowStatus: commit}},
		"no commit":                  {{RowKey: []byte("r"), FamilyName: str("f"), Qualifier: qual("a")}},
		"keys out of order": {{RowKey: []byte("b"), FamilyName: str("f"), Qualifier: qual("a"), RowStatus: commit},
			{RowKey: []byte("a"), FamilyName: str("f"), Qualifier: qual("a"), RowStatus: commit}},
	} {
		if _, err := decodeChunks(chunks); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
