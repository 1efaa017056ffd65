package metrics

import (
	"context"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
)

// MasterServerOptions are the gRPC options that observe the master's
// admin RPCs for server.
func (m *Metrics) MasterServerOptions(server string) []grpc.ServerOption {
	return interceptors(server, m.masterRPC, m.masterRPCs)
}

// BigtableServerOptions are the gRPC options that observe the Bigtable
// API's RPCs for server.
func (m *Metrics) BigtableServerOptions(server string) []grpc.ServerOption {
	return interceptors(server, m.bigtableRPC, m.bigtableRPCs)
}

// interceptors time every unary and streaming call into hist and count it
// by code into total.
func interceptors(server string, hist *prometheus.HistogramVec, total *prometheus.CounterVec) []grpc.ServerOption {
	r := newRPCSeries(server, hist, total)
	done := func(full string, start time.Time, err error) {
		r.observe(full[strings.LastIndexByte(full, '/')+1:], time.Since(start), err)
	}
	return []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			start := time.Now()
			resp, err := h(ctx, req)
			done(info.FullMethod, start, err)
			return resp, err
		}),
		grpc.ChainStreamInterceptor(func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			start := time.Now()
			err := h(srv, ss)
			done(info.FullMethod, start, err)
			return err
		}),
	}
}
