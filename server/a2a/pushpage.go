package a2a

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"

	"github.com/batonhq/baton/store"
)

// Pages of protocol 1.0's ListTaskPushNotificationConfigs: pageSize is
// the most configs a page holds (0: maxPushPage; more than maxPushPage:
// maxPushPage), pageToken the nextPageToken of the page before, an opaque
// cursor: the creation time and id of the page's last config, so a config
// deleted or added between pages neither shifts nor repeats the others.

// maxPushPage is the largest page, and the size of one when pageSize is
// not given (ListTasks' bound in the A2A 1.0 proto).
const maxPushPage = 100

// maxPushToken bounds a page token's length: a config id of up to
// maxPushID bytes and a time, base64-encoded.
const maxPushToken = 4 * (maxPushID + 32) / 3

// maxPushID bounds a config id in a page token.
const maxPushID = 512

// pushCursor is where a page of configs starts: after the config created
// at created with id.
type pushCursor struct {
	created int64 // microseconds since the epoch
	id      string
}

func (c pushCursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.created, 10) + "/" + c.id))
}

// parsePushToken reads a page token; a malformed one is ErrInvalidParams.
func parsePushToken(token string) (pushCursor, error) {
	bad := func(why string) (pushCursor, error) {
		return pushCursor{}, fmt.Errorf("%w: pageToken is not a token this server gave (%s): give the nextPageToken of the page before, or none", a2a.ErrInvalidParams, why)
	}
	if len(token) > maxPushToken {
		return bad("too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return bad("not base64url")
	}
	micros, id, ok := strings.Cut(string(b), "/")
	if !ok || id == "" || len(id) > maxPushID {
		return bad("no config id")
	}
	created, err := strconv.ParseInt(micros, 10, 64)
	if err != nil || created < 0 || micros != strconv.FormatInt(created, 10) {
		return bad("no time")
	}
	return pushCursor{created: created, id: id}, nil
}

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
	cursorOf := func(c *store.PushConfig) pushCursor { return pushCursor{created: c.CreatedAt.UnixMicro(), id: c.ID} }
	compare := func(a, b pushCursor) int {
		return cmp.Or(cmp.Compare(a.created, b.created), strings.Compare(a.id, b.id))
	}
	// In Go's order, not the database's collation: the cursor compares so.
	cs = slices.Clone(cs)
	slices.SortFunc(cs, func(a, b *store.PushConfig) int { return compare(cursorOf(a), cursorOf(b)) })
	if token != "" {
		after, err := parsePushToken(token)
		if err != nil {
			return nil, "", err
		}
		i, _ := slices.BinarySearchFunc(cs, after, func(c *store.PushConfig, k pushCursor) int {
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
