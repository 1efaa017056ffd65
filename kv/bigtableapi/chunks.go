package bigtableapi

import (
	btpb "cloud.google.com/go/bigtable/apiv2/bigtablepb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/cellardb/cellar/kv/model"
)

// chunkOverhead estimates the bytes a chunk adds to a response besides its
// key, names and value, for deciding when a response is full.
const chunkOverhead = 24

// appendRowChunks appends the CellChunks of one row, in the form the
// service sends (see the package comment): the key and the column names
// only where they change, values longer than maxValue split over several
// chunks, commit_row on the last. It returns the chunks and roughly how
// many bytes they add. A row without cells adds nothing: the service never
// sends one.
func appendRowChunks(chunks []*btpb.ReadRowsResponse_CellChunk, row model.Row, maxValue int) ([]*btpb.ReadRowsResponse_CellChunk, int) {
	size := 0
	first := len(chunks)
	for i := range row.Cells {
		c := &row.Cells[i]
		ch := &btpb.ReadRowsResponse_CellChunk{TimestampMicros: c.Timestamp}
		switch {
		case i == 0:
			ch.RowKey = row.Key
			ch.FamilyName = wrapperspb.String(c.Family)
			ch.Qualifier = wrapperspb.Bytes(c.Qualifier)
			size += len(row.Key) + len(c.Family) + len(c.Qualifier)
		case c.Family != row.Cells[i-1].Family:
			// The clients need the qualifier whenever the family changes.
			// (A wrapper is present even for an empty qualifier.)
			ch.FamilyName = wrapperspb.String(c.Family)
			ch.Qualifier = wrapperspb.Bytes(c.Qualifier)
			size += len(c.Family) + len(c.Qualifier)
		case string(c.Qualifier) != string(row.Cells[i-1].Qualifier):
			ch.Qualifier = wrapperspb.Bytes(c.Qualifier)
			size += len(c.Qualifier)
		}
		if row.Labels != nil && len(row.Labels[i]) > 0 {
			ch.Labels = row.Labels[i]
		}
		size += chunkOverhead + len(c.Value)
		value := c.Value
		if maxValue > 0 && len(value) > maxValue {
			// A split cell: value_size on every piece but the last, and
			// nothing but the value after the first.
			ch.ValueSize = int32(len(value))
			ch.Value = value[:maxValue]
			chunks = append(chunks, ch)
			for value = value[maxValue:]; len(value) > maxValue; value = value[maxValue:] {
				chunks = append(chunks, &btpb.ReadRowsResponse_CellChunk{Value: value[:maxValue], ValueSize: int32(len(c.Value))})
				size += chunkOverhead
			}
			ch = &btpb.ReadRowsResponse_CellChunk{}
			size += chunkOverhead
		}
		ch.Value = value
		chunks = append(chunks, ch)
	}
	if len(chunks) > first {
		chunks[len(chunks)-1].RowStatus = &btpb.ReadRowsResponse_CellChunk_CommitRow{CommitRow: true}
	}
	return chunks, size
}
