package localapi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/node"
	"github.com/parley-mesh/parley/node/nodetest"
)

// A node that stops ends its long polls at once, each answered with
// CodeStopping (the client's *Stopped), and its rooms' tails with a
// "stopped" event (a *Stopped with Stream set): neither waits out the
// shutdown grace, nor reads as a wait that passed or a room gone quiet.
func TestShutdownEndsLongPollsAndTails(t *testing.T) {
	nt := nodetest.Start(t, 1)
	c := localapi.NewClient(node.SocketPath(nt.Home(0)))
	defer c.Close()
	ctx := context.Background()
	if _, err := c.OpenRoom(ctx, "human", localapi.OpenRoomRequest{Name: "r"}); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() {
		_, err := c.Wait(ctx, "human", localapi.WaitRequest{Seconds: localapi.MaxWait.Seconds()})
		waited <- err
	}()
	tailed := make(chan error, 1)
	seen := make(chan struct{}, 64)
	go func() {
		tailed <- c.Tail(ctx, "r", func(localapi.Event) error {
			select {
			case seen <- struct{}{}:
			default:
			}
			return nil
		})
	}()
	// The tail is up once a message said now shows in it; the wait, asked
	// for before it, is open by then.
	nodetest.WaitFor(t, 20*time.Second, func() bool {
		if _, err := c.Say(ctx, "human", localapi.SayRequest{Room: "r", Text: "a line"}); err != nil {
			t.Fatal(err)
		}
		select {
		case <-seen:
			return true
		case <-time.After(200 * time.Millisecond):
			return false
		}
	}, "the tail to show a message")
	select {
	case err := <-waited:
		t.Fatalf("the wait ended before the node stopped: %v", err)
	default:
	}
	go nt.Node(0).Close()
	start := time.Now()
	for _, ch := range []chan error{waited, tailed} {
		select {
		case err := <-ch:
			var st *localapi.Stopped
			if !errors.As(err, &st) || !errors.Is(err, localapi.ErrNodeStopped) {
				t.Fatalf("a request the node's stop ended: %v (%T); want a *localapi.Stopped", err, err)
			}
			if st.Stream != (ch == tailed) || st.Stream && !errors.Is(st.Err, localapi.ErrStreamStopped) || !st.Stream && !localapi.IsCode(st.Err, localapi.CodeStopping) {
				t.Fatalf("a request the node's stop ended: %+v", st)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("a request did not end when the node stopped")
		}
	}
	if took := time.Since(start); took > 1500*time.Millisecond {
		t.Fatalf("the node's stop ended its long poll and tail after %s: it waited out its shutdown grace", took.Round(time.Millisecond))
	}
}
