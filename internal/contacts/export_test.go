package contacts

import "github.com/libp2p/go-libp2p/core/network"

// Handler is the service's stream handler, for tests that take it off a
// host and put it back (a peer still starting).
func (s *Service) Handler() network.StreamHandler { return s.handle }
