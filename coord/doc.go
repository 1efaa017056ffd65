// Package coord will hold the public types of cellar's Chubby-style lock
// service: paths, modes, sequencers, events and errors (issue 3). It is
// empty until then.
package coord
