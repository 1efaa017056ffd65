package cell

import (
	"context"
	"crypto/subtle"
	"errors"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/cellardb/cellar/coord"
	pb "github.com/cellardb/cellar/coord/coordpb"
	"github.com/cellardb/cellar/coord/fsm"
)

// Metadata keys a client sends with every call, and the trailer that names
// the master when a replica turns a call away.
const (
	PrincipalKey = "cellar-principal"
	SecretKey    = "cellar-secret"
	MasterKey    = "cellar-master"
	// AckBelowKey carries, on every call, the id below which the client
	// needs no recorded request results any more, so that the cell can
	// forget them at once rather than at the next KeepAlive.
	AckBelowKey = "cellar-ack-below"
)

type principalKey struct{}

type ackBelowKey struct{}

// authInterceptor checks the cell secret and puts the caller's principal in
// the context.
func (r *Replica) authInterceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	first := func(k string) string {
		if v := md.Get(k); len(v) > 0 {
			return v[0]
		}
		return ""
	}
	if r.opts.Secret != "" && subtle.ConstantTimeCompare([]byte(first(SecretKey)), []byte(r.opts.Secret)) != 1 {
		return nil, status.Error(codes.Unauthenticated, "permission-denied: wrong or missing cell secret")
	}
	principal := first(PrincipalKey)
	if principal == "" {
		principal = "anonymous"
	}
	ctx = context.WithValue(ctx, principalKey{}, principal)
	if v, err := strconv.ParseUint(first(AckBelowKey), 10, 64); err == nil {
		ctx = context.WithValue(ctx, ackBelowKey{}, v)
	}
	resp, err := h(ctx, req)
	return resp, toStatus(ctx, r, err)
}

// toStatus turns an error into a gRPC status; a NotMaster error carries
// the master's address in a trailer.
func toStatus(ctx context.Context, r *Replica, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok && !isCoord(err) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, err.Error())
	}
	if errors.Is(err, context.Canceled) {
		return status.Error(codes.Canceled, err.Error())
	}
	var ce *coord.Error
	if !errors.As(err, &ce) {
		ce = coord.Errorf(coord.Unknown, "%v", err)
	}
	if ce.Kind == coord.NotMaster {
		if addr := r.masterAddr(); addr != "" && addr != r.advertised() {
			grpc.SetTrailer(ctx, metadata.Pairs(MasterKey, addr))
		}
	}
	return status.Error(codes.Code(ce.Kind.Code()), ce.StatusMessage())
}

func isCoord(err error) bool {
	var ce *coord.Error
	return errors.As(err, &ce)
}

// server implements the Chubby service.
type server struct {
	pb.UnimplementedChubbyServer
	r *Replica
}

func (s *server) master() (*master, error) {
	if m := s.r.currentMaster(); m != nil {
		return m, nil
	}
	return nil, coord.Errorf(coord.NotMaster, "replica %d is not the master of cell %s", s.r.opts.ReplicaID, s.r.opts.Cell)
}

func (s *server) FindMaster(ctx context.Context, _ *pb.FindMasterRequest) (*pb.FindMasterResponse, error) {
	out := &pb.FindMasterResponse{Cell: s.r.opts.Cell}
	if m := s.r.currentMaster(); m != nil {
		out.Master, out.Epoch = s.r.advertised(), m.epoch
		return out, nil
	}
	out.Master = s.r.masterAddr()
	return out, nil
}

func (s *server) CreateSession(ctx context.Context, _ *pb.CreateSessionRequest) (*pb.CreateSessionResponse, error) {
	m, err := s.master()
	if err != nil {
		return nil, err
	}
	return m.createSession(ctx, ctx.Value(principalKey{}).(string))
}

func (s *server) KeepAlive(ctx context.Context, req *pb.KeepAliveRequest) (*pb.KeepAliveResponse, error) {
	m, err := s.master()
	if err != nil {
		return nil, err
	}
	return m.keepAlive(ctx, req)
}

func (s *server) CloseSession(ctx context.Context, req *pb.CloseSessionRequest) (*pb.CloseSessionResponse, error) {
	m, err := s.master()
	if err != nil {
		return nil, err
	}
	sess, err := m.session(ctx, req.Session)
	var ce *coord.Error
	if errors.As(err, &ce) && ce.Kind == coord.SessionExpired {
		return &pb.CloseSessionResponse{}, nil // already gone
	}
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	sess.expiring = true
	m.mu.Unlock()
	if err := m.endSession(ctx, sess.id, false); err != nil {
		m.mu.Lock()
		sess.expiring = false
		m.mu.Unlock()
		return nil, err
	}
	return &pb.CloseSessionResponse{}, nil
}

func (s *server) Open(ctx context.Context, req *pb.OpenRequest) (*pb.OpenResponse, error) {
	m, err := s.master()
	if err != nil {
		return nil, err
	}
	sess, err := m.session(ctx, req.Session)
	if err != nil {
		return nil, err
	}
	// Opening changes no cached copy: a node it creates was not there to
	// cache, and the parent's metadata does not change.
	cmd := &pb.Command{Session: sess.id, RequestId: req.RequestId, Op: &pb.Command_Open{Open: req}}
	m.mu.Lock()
	cmd.AckBelow = sess.ackBelow
	m.mu.Unlock()
	res, err := m.propose(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if path, perr := coord.CleanPath(req.Path); perr == nil {
		m.mu.Lock()
		m.handles[res.Open.Handle.Id] = path
		m.mu.Unlock()
	}
	return res.Open, nil
}

// withHandle validates the session and finds the handle's path.
func (s *server) withHandle(ctx context.Context, sref *pb.SessionRef, href *pb.HandleRef) (*master, *liveSession, string, error) {
	m, err := s.master()
	if err != nil {
		return nil, nil, "", err
	}
	sess, err := m.session(ctx, sref)
	if err != nil {
		return nil, nil, "", err
	}
	if href == nil {
		return nil, nil, "", coord.Errorf(coord.InvalidArgument, "no handle")
	}
	path, err := m.handlePath(ctx, href.Id)
	if err != nil {
		return nil, nil, "", err
	}
	return m, sess, path, nil
}

func (s *server) Close(ctx context.Context, req *pb.HandleRequest) (*pb.Empty, error) {
	m, sess, path, err := s.withHandle(ctx, req.Session, req.Handle)
	if err != nil {
		return nil, err
	}
	_, err = m.mutate(ctx, sess, path, &pb.Command{RequestId: req.RequestId, Op: &pb.Command_Close{Close: req}})
	return &pb.Empty{}, err
}

func (s *server) get(ctx context.Context, req *pb.HandleRequest, contents bool) (*pb.GetResponse, error) {
	m, sess, path, err := s.withHandle(ctx, req.Session, req.Handle)
	if err != nil {
		return nil, err
	}
	cacheable := m.registerCacher(sess, path)
	v, err := m.read(ctx, fsm.GetQuery{Session: req.Session, Handle: req.Handle, Contents: contents})
	if err != nil {
		return nil, err
	}
	out := v.(*pb.GetResponse)
	out.Cacheable = cacheable
	return out, nil
}

func (s *server) GetContentsAndStat(ctx context.Context, req *pb.HandleRequest) (*pb.GetResponse, error) {
	return s.get(ctx, req, true)
}

func (s *server) GetStat(ctx context.Context, req *pb.HandleRequest) (*pb.GetResponse, error) {
	return s.get(ctx, req, false)
}

func (s *server) ReadDir(ctx context.Context, req *pb.HandleRequest) (*pb.ReadDirResponse, error) {
	m, _, _, err := s.withHandle(ctx, req.Session, req.Handle)
	if err != nil {
		return nil, err
	}
	v, err := m.read(ctx, fsm.ReadDirQuery{Session: req.Session, Handle: req.Handle})
	if err != nil {
		return nil, err
	}
	return v.(*pb.ReadDirResponse), nil
}

func (s *server) SetContents(ctx context.Context, req *pb.SetContentsRequest) (*pb.SetContentsResponse, error) {
	m, sess, path, err := s.withHandle(ctx, req.Session, req.Handle)
	if err != nil {
		return nil, err
	}
	res, err := m.mutate(ctx, sess, path, &pb.Command{RequestId: req.RequestId, Op: &pb.Command_SetContents{SetContents: req}})
	if err != nil {
		return nil, err
	}
	return &pb.SetContentsResponse{Stat: res.Stat}, nil
}

func (s *server) SetACL(ctx context.Context, req *pb.SetACLRequest) (*pb.SetACLResponse, error) {
	m, sess, path, err := s.withHandle(ctx, req.Session, req.Handle)
	if err != nil {
		return nil, err
	}
	res, err := m.mutate(ctx, sess, path, &pb.Command{RequestId: req.RequestId, Op: &pb.Command_SetAcl{SetAcl: req}})
	if err != nil {
		return nil, err
	}
	return &pb.SetACLResponse{Stat: res.Stat}, nil
}

func (s *server) Delete(ctx context.Context, req *pb.HandleRequest) (*pb.Empty, error) {
	m, sess, path, err := s.withHandle(ctx, req.Session, req.Handle)
	if err != nil {
		return nil, err
	}
	_, err = m.mutate(ctx, sess, path, &pb.Command{RequestId: req.RequestId, Op: &pb.Command_Delete{Delete: req}})
	return &pb.Empty{}, err
}

// Acquire tries the lock; with wait set it tries again whenever the lock
// may have changed hands or its lock-delay ends, until the call's deadline.
func (s *server) Acquire(ctx context.Context, req *pb.AcquireRequest) (*pb.AcquireResponse, error) {
	m, sess, path, err := s.withHandle(ctx, req.Session, req.Handle)
	if err != nil {
		return nil, err
	}
	for attempt := uint64(0); ; attempt++ {
		moved := m.moved(path)
		try := &pb.AcquireRequest{Session: req.Session, RequestId: req.RequestId, Handle: req.Handle, Mode: req.Mode}
		if attempt > 0 {
			// Each retry is a new command: the recorded busy answer of the
			// first must not come back.
			try.RequestId = 0
		}
		res, err := m.mutate(ctx, sess, path, &pb.Command{RequestId: try.RequestId, Op: &pb.Command_TryAcquire{TryAcquire: try}})
		if err != nil {
			return nil, err
		}
		if res.Acquired || !req.Wait {
			return &pb.AcquireResponse{Acquired: res.Acquired, Sequencer: res.Sequencer}, nil
		}
		if attempt == 0 && res.Epoch != m.epoch {
			// A recorded answer from an earlier master: the client resent
			// its request id after a failover, and got the busy answer the
			// old master recorded, maybe from before the holder's session
			// ended there. Waiting on it would wait for a change that
			// already happened; ask again as a new command, which sees the
			// lock as it is now.
			continue
		}
		var timer <-chan time.Time
		if res.RetryAfterMs > 0 {
			// RetryAfterMs is on the cell's clock, not this machine's wall
			// clock.
			t := time.NewTimer(time.Duration(res.RetryAfterMs-m.now())*time.Millisecond + time.Millisecond)
			defer t.Stop()
			timer = t.C
		}
		select {
		case <-moved:
		case <-timer:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-m.ctx.Done():
			return nil, coord.Errorf(coord.NotMaster, "master stepped down")
		}
		if _, err := m.session(ctx, req.Session); err != nil {
			return nil, err
		}
	}
}

func (s *server) Release(ctx context.Context, req *pb.HandleRequest) (*pb.Empty, error) {
	m, sess, path, err := s.withHandle(ctx, req.Session, req.Handle)
	if err != nil {
		return nil, err
	}
	_, err = m.mutate(ctx, sess, path, &pb.Command{RequestId: req.RequestId, Op: &pb.Command_Release{Release: req}})
	return &pb.Empty{}, err
}

func (s *server) SetSequencer(ctx context.Context, req *pb.SetSequencerRequest) (*pb.Empty, error) {
	m, sess, _, err := s.withHandle(ctx, req.Session, req.Handle)
	if err != nil {
		return nil, err
	}
	cmd := &pb.Command{Session: sess.id, RequestId: req.RequestId, Op: &pb.Command_SetSequencer{SetSequencer: req}}
	_, err = m.propose(ctx, cmd)
	return &pb.Empty{}, err
}

// CheckSequencer is answered by any replica, through a read index.
func (s *server) CheckSequencer(ctx context.Context, req *pb.CheckSequencerRequest) (*pb.CheckSequencerResponse, error) {
	v, err := s.r.read(ctx, fsm.CheckSequencerQuery{Sequencer: req.Sequencer})
	if err != nil {
		return nil, err
	}
	return v.(*pb.CheckSequencerResponse), nil
}
