package a2a

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/internal/a2av1"
	"github.com/batonhq/baton/store"
)

// Pages of protocol 1.0's ListTaskPushNotificationConfigs: pageSize is
// the most configs a page holds (0: maxPushPage; more than maxPushPage:
// maxPushPage), pageToken the nextPageToken of the page before
// (a2av1.PushCursor).

// maxPushPage is the largest page, and the size of one when pageSize is
// not given (ListTasks' bound in the A2A 1.0 proto).
const maxPushPage = 100

// pushPage returns the page of cs (all the configs of a task) that size
// and token ask for, in creation order, and the token of the next page
// ("" after the last).
func pushPage(cs []*store.PushConfig, size int, token string) ([]*store.PushConfig, string, error) {
	if size < 0 {
		return nil, "", fmt.Errorf("%w: pageSize %d is negative", a2a.ErrInvalidParams, size)
	}
	if size == 0 || size > maxPushPage {
		size = maxPushPage
	}
	cursorOf := func(c *store.PushConfig) a2av1.PushCursor {
		return a2av1.PushCursor{Created: c.CreatedAt.UnixMicro(), ID: c.ID}
	}
	compare := func(a, b a2av1.PushCursor) int {
		return cmp.Or(cmp.Compare(a.Created, b.Created), strings.Compare(a.ID, b.ID))
	}
	// In Go's order, not the database's collation: the cursor compares so.
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b *store.PushConfig) int { return compare(cursorOf(a), cursorOf(b)) })
	if token != "" {
		after, err := a2av1.ParsePushToken(token)
		if err != nil {
			return nil, "", err
		}
		i, _ := slices.BinarySearchFunc(cs, after, func(c *store.PushConfig, k a2av1.PushCursor) int {
			if compare(cursorOf(c), k) <= 0 {
				return -1
			}
			return 1
		})
		cs = cs[i:]
	}
	if len(cs) <= size {
		return cs, "", nil
	}
	return cs[:size], cursorOf(cs[size-1]).String(), nil
}
