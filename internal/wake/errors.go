package wake

import "errors"

var (
	// ErrStopped is returned when the service is not running.
	ErrStopped = errors.New("wake: the wake-up service is not running")
	// ErrBadRoute is returned for a route that cannot be used (an unknown
	// kind, no session, a pane that is not there).
	ErrBadRoute = errors.New("wake: bad route")
	// ErrUnregistered is wrapped by a Config.Heartbeat error when the agent
	// is not registered.
	ErrUnregistered = errors.New("wake: the agent is not registered")
	// ErrRouteTaken is returned when a terminal route would move to its
	// session's new name while that name's route is the pane of another
	// session whose program still runs and which is still bound to that
	// name: that pane keeps the route, as the agent registry lets a live
	// session keep its name.
	ErrRouteTaken = errors.New("wake: the agent's terminal route is another session's pane")
)
