// Package pgwire is cellar's PostgreSQL wire-protocol server (protocol
// 3.0), so that psql, drivers and BI tools connect to cellar as they do
// to PostgreSQL. The SQL a connection carries is package query's; this
// package is the protocol around it.
//
// # A connection's states
//
//	accept ──► startup ─────────────────────────────────────────────┐
//	            │ SSLRequest: 'S' and a TLS handshake if a           │
//	            │   certificate is configured, else 'N'; bytes sent   │
//	            │   after the request and before the handshake are a  │
//	            │   protocol violation                                │
//	            │ GSSENCRequest: 'N'                                  │
//	            │ CancelRequest: cancel that backend's statement;     │
//	            │   close                                             │
//	            ▼ StartupMessage 3.0 (others refused)                 │
//	          authentication, by the first rule that matches the     │
//	            source, user and database (Options.Rules): trust,     │
//	            password (cleartext, TLS only), md5, scram-sha-256,   │
//	            or reject                                             │
//	            │ all of startup and authentication within            │
//	            │ AuthTimeout, messages capped at MaxAuthMessage      │
//	            ▼                                                     │
//	          AuthenticationOk, ParameterStatus for every reported    │
//	          setting, BackendKeyData, ReadyForQuery ◄────────────────┘
//	            │
//	            ▼ ready: messages up to MaxMessageSize
//	          Query ── each statement: RowDescription, DataRow...,
//	            │      CommandComplete (or EmptyQueryResponse); the
//	            │      first error ends the message; ReadyForQuery
//	          Parse / Bind / Describe / Execute / Close / Flush ──
//	            │      after an error, everything up to Sync is
//	            │      skipped; Sync answers ReadyForQuery
//	          Terminate, EOF, or the idle-session timeout ── close
//
// ReadyForQuery carries the transaction status (I, T or E) that package
// query keeps. A SET that changes a reported setting is followed by its
// ParameterStatus. Every error is an ErrorResponse with a SQLSTATE; a
// FATAL one closes the connection.
//
// # Limits
//
// A startup packet is at most 10,000 bytes. Messages before
// authentication are capped at MaxAuthMessage, after it at
// MaxMessageSize (16 MiB). At most MaxConns connections are served; the
// next gets 53300. statement_timeout cancels a statement (57014), and
// idle_session_timeout (or Options.IdleSessionTimeout) closes an idle
// connection (57P05).
package pgwire
