package commitlog

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/cellardb/cellar/kv/model"
)

var crcTable = crc32.MakeTable(crc32.Castagnoli)

const (
	recordHeaderLen = 8
	// maxRecordLen bounds a record's payload, so a corrupt length cannot
	// make replay allocate or skip gigabytes.
	maxRecordLen = model.MaxMutationBytes + 1<<20

	typeMutation byte = 1
)

// Record is one logged row mutation.
type Record struct {
	// LSN is the server-wide log sequence number, assigned by Append.
	LSN uint64
	// Tablet identifies the tablet the mutation belongs to.
	Tablet uint64
	// Table names the tablet's table.
	Table string
	// Seq is the tablet sequence number of the first mutation; mutation i
	// carries Seq+i.
	Seq uint64
	// Mutation is the row mutation, with every timestamp resolved.
	Mutation model.RowMutation
}

// appendRecord appends the framed encoding of r to dst.
func appendRecord(dst []byte, r *Record) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0, 0, 0, 0, 0)
	dst = append(dst, typeMutation)
	dst = binary.AppendUvarint(dst, r.LSN)
	dst = binary.AppendUvarint(dst, r.Tablet)
	dst = appendBytes(dst, []byte(r.Table))
	dst = binary.AppendUvarint(dst, r.Seq)
	dst = appendBytes(dst, r.Mutation.Row)
	dst = binary.AppendUvarint(dst, uint64(len(r.Mutation.Mutations)))
	for i := range r.Mutation.Mutations {
		m := &r.Mutation.Mutations[i]
		dst = append(dst, byte(m.Kind))
		switch m.Kind {
		case model.KindSetCell:
			dst = appendBytes(dst, []byte(m.Family))
			dst = appendBytes(dst, m.Qualifier)
			dst = binary.AppendVarint(dst, m.Timestamp)
			dst = appendBytes(dst, m.Value)
		case model.KindDeleteColumn:
			dst = appendBytes(dst, []byte(m.Family))
			dst = appendBytes(dst, m.Qualifier)
			dst = binary.AppendVarint(dst, m.Range.Start)
			dst = binary.AppendVarint(dst, m.Range.End)
		case model.KindDeleteFamily:
			dst = appendBytes(dst, []byte(m.Family))
		}
	}
	payload := dst[start+recordHeaderLen:]
	binary.LittleEndian.PutUint32(dst[start:], uint32(len(payload)))
	crc := crc32.Update(0, crcTable, dst[start:start+4])
	crc = crc32.Update(crc, crcTable, payload)
	binary.LittleEndian.PutUint32(dst[start+4:], crc)
	return dst
}

func appendBytes(dst, b []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(b)))
	return append(dst, b...)
}

// errTorn marks a record that is incomplete or fails its checksum; the
// reader decides whether that is a torn tail or corruption.
var errTorn = errors.New("torn or corrupt record")

// nextRecord frames the record at the start of b. It returns the payload
// and the record's total length, or errTorn.
func nextRecord(b []byte) (payload []byte, n int, err error) {
	if len(b) < recordHeaderLen {
		return nil, 0, fmt.Errorf("%w: %d bytes left, header needs %d", errTorn, len(b), recordHeaderLen)
	}
	length := binary.LittleEndian.Uint32(b)
	if length == 0 || length > maxRecordLen {
		return nil, 0, fmt.Errorf("%w: bad length %d", errTorn, length)
	}
	if uint64(len(b)-recordHeaderLen) < uint64(length) {
		return nil, 0, fmt.Errorf("%w: length %d runs past the end", errTorn, length)
	}
	payload = b[recordHeaderLen : recordHeaderLen+int(length)]
	crc := crc32.Update(0, crcTable, b[:4])
	crc = crc32.Update(crc, crcTable, payload)
	if crc != binary.LittleEndian.Uint32(b[4:]) {
		return nil, 0, fmt.Errorf("%w: checksum mismatch", errTorn)
	}
	return payload, recordHeaderLen + int(length), nil
}

type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("malformed record: bad %s", what)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(what string) []byte {
	n := d.uvarint(what)
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) byte(what string) byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail(what)
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// decodePayload parses a record payload whose checksum already matched.
// The record's byte slices alias payload.
func decodePayload(payload []byte) (*Record, error) {
	d := decoder{b: payload}
	if t := d.byte("type"); d.err == nil && t != typeMutation {
		return nil, fmt.Errorf("malformed record: unknown type %d", t)
	}
	r := &Record{}
	r.LSN = d.uvarint("lsn")
	r.Tablet = d.uvarint("tablet")
	r.Table = string(d.bytes("table"))
	r.Seq = d.uvarint("seq")
	r.Mutation.Row = d.bytes("row")
	n := d.uvarint("mutation count")
	if d.err == nil && n > uint64(len(d.b)) {
		d.fail("mutation count")
	}
	if d.err != nil {
		return nil, d.err
	}
	r.Mutation.Mutations = make([]model.Mutation, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		m := model.Mutation{Kind: model.MutationKind(d.byte("kind"))}
		switch m.Kind {
		case model.KindSetCell:
			m.Family = string(d.bytes("family"))
			m.Qualifier = d.bytes("qualifier")
			m.Timestamp = d.varint("timestamp")
			m.Value = d.bytes("value")
		case model.KindDeleteColumn:
			m.Family = string(d.bytes("family"))
			m.Qualifier = d.bytes("qualifier")
			m.Range.Start = d.varint("range start")
			m.Range.End = d.varint("range end")
		case model.KindDeleteFamily:
			m.Family = string(d.bytes("family"))
		case model.KindDeleteRow:
		default:
			d.fail("mutation kind")
		}
		r.Mutation.Mutations = append(r.Mutation.Mutations, m)
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	if r.Seq+uint64(len(r.Mutation.Mutations)) > model.MaxSeq {
		return nil, fmt.Errorf("malformed record: sequence %d out of range", r.Seq)
	}
	return r, nil
}
