package tabletserver

import "errors"

// Ready reports why the server is not ready, or nil: it is ready once it
// is registered (holds its lock) and serves RPCs on a listener.
func (s *Server) Ready() error {
	if err := s.serving(); err != nil {
		return err
	}
	s.mu.Lock()
	g := s.grpc
	s.mu.Unlock()
	if g == nil {
		return errors.New("tabletserver: registered but not serving RPCs yet")
	}
	return nil
}
