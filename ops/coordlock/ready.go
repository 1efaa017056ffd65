package coordlock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cellardb/cellar/coord"
	"github.com/cellardb/cellar/coord/client"
)

// Ready reports why the session is not usable now, or nil: its lease is
// valid. An expired session is replaced only when it is used, so a
// session without a valid lease is probed with a read of the cell's root,
// which replaces it if the cell answers.
func (s *Session) Ready(ctx context.Context) error {
	if s.cur().Safe() {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	err := s.do(ctx, func(c *client.Client) error {
		h, _, err := c.OpenNode(ctx, "/ls/local", client.OpenOptions{Mode: coord.ModeRead})
		if err != nil {
			return err
		}
		return h.Close(ctx)
	})
	if err != nil {
		return fmt.Errorf("the Chubby session has no valid lease and the cell does not answer: %w", err)
	}
	if !s.cur().Safe() {
		return errors.New("the Chubby session has no valid lease")
	}
	return nil
}
