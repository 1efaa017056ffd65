package client

import (
	"bytes"
	"context"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/cellardb/cellar/kv/tabletpb"
)

// SampleRowKey is one sample of a table's keys, as Cloud Bigtable's
// SampleRowKeysResponse defines it.
type SampleRowKey struct {
	// Key is a tablet's end row; empty in the last sample, where it means
	// the table's end.
	Key []byte
	// OffsetBytes approximates the bytes of the table's rows before Key:
	// the SSTable bytes of the tablets that end at or before it. Writes
	// still only in a memtable are not counted, so a table written a
	// moment ago may sample as 0 bytes.
	OffsetBytes int64
}

// SampleRowKeys returns one sample per tablet of table, in key order, with
// cumulative offsets across the table; the last sample has an empty key.
// The tablets are the ones the location lookup finds, as a scan would.
// Each tablet's size comes from its server's SampleRowKeys answer (one
// call per server, unless a tablet is missing from it: then that server
// is asked again, and a tablet it still does not list counts as "not
// serving", so the location is looked up again in the one retry loop).
func (c *Client) SampleRowKeys(ctx context.Context, table string) ([]SampleRowKey, error) {
	// The servers' answers, by address, for this call: one answer lists
	// every tablet of the table that server serves.
	answers := map[string]*pb.SampleRowKeysResponse{}
	var out []SampleRowKey
	var offset int64
	var row []byte
	for {
		var size int64
		var end []byte
		err := c.do(ctx, table, row, func(ctx context.Context, cli pb.TabletServerClient, loc location) error {
			var err error
			end = loc.end
			size, err = tabletBytes(ctx, cli, answers, table, loc)
			return err
		})
		if err != nil {
			return nil, err
		}
		offset += size
		out = append(out, SampleRowKey{Key: bytes.Clone(end), OffsetBytes: offset})
		if len(end) == 0 {
			return out, nil
		}
		row = end
	}
}

// tabletBytes returns the size of the tablet at loc from its server's
// SampleRowKeys answer: the difference of its offset and the offset of
// the server's sample before it, since a server's offsets add up its own
// tablets of the table.
func tabletBytes(ctx context.Context, cli pb.TabletServerClient, answers map[string]*pb.SampleRowKeysResponse, table string, loc location) (int64, error) {
	resp, cached := answers[loc.addr]
	for {
		if !cached {
			var err error
			if resp, err = cli.SampleRowKeys(ctx, &pb.SampleRowKeysRequest{Table: table}); err != nil {
				delete(answers, loc.addr)
				return 0, err
			}
			answers[loc.addr] = resp
		}
		var prev int64
		for _, s := range resp.Samples {
			if bytes.Equal(s.StartKey, loc.start) && bytes.Equal(s.RowKey, loc.end) {
				return s.OffsetBytes - prev, nil
			}
			prev = s.OffsetBytes
		}
		if !cached {
			// A fresh answer without the tablet: it split, merged or moved
			// since the location was cached.
			delete(answers, loc.addr)
			return 0, status.Errorf(codes.FailedPrecondition, "not serving: the server at %s does not list tablet [%q, %q) of %q", loc.addr, loc.start, loc.end, table)
		}
		cached = false // an older answer: ask again
	}
}
