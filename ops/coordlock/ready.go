package coordlock

import "errors"

// Ready reports why the session is not usable now, or nil: its lease is
// valid. An expired session is replaced on its next use.
func (s *Session) Ready() error {
	if !s.cur().Safe() {
		return errors.New("the Chubby session has no valid lease (the cell is unreachable or the session expired)")
	}
	return nil
}
