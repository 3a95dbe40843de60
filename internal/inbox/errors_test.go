package inbox

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/parley-mesh/parley/internal/localapi"
	"github.com/parley-mesh/parley/internal/store"
	"github.com/parley-mesh/parley/rooms"
)

// TestSentNotStoredMapsFirst: a post that went out but whose write failed
// is told apart from the write's own error (a full disk, say): 507
// not_stored, with the whole message, so a caller does not post it again.
func TestSentNotStoredMapsFirst(t *testing.T) {
	cause := fmt.Errorf("store: write 7 keys: %w", store.ErrDiskFull)
	err := apiError(fmt.Errorf("%w (event abc): %w", rooms.ErrSentNotStored, cause))
	var e *localapi.Error
	if !errors.As(err, &e) || e.Status != http.StatusInsufficientStorage || e.Code != localapi.CodeNotStored ||
		!strings.Contains(e.Message, "do not post it again") || !strings.Contains(e.Message, "event abc") {
		t.Fatalf("apiError: %v (%+v)", err, e)
	}
	if err := apiError(rooms.ErrOwnEventsUnknown); !errors.As(err, &e) || e.Code != localapi.CodeLearning {
		t.Fatalf("apiError(ErrOwnEventsUnknown): %v", err)
	}
}
