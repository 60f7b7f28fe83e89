package a2av1

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/a2aproject/a2a-go/a2a"
)

// A page token of ListTaskPushNotificationConfigs: an opaque cursor, the
// creation time and id of the page's last config, so that a config
// deleted or added between pages neither shifts nor repeats the others.

// MaxPushToken bounds a page token's length: a config id of up to
// MaxPushID bytes and a time, base64-encoded.
const MaxPushToken = 4 * (MaxPushID + 32) / 3

// MaxPushID bounds a config id in a page token.
const MaxPushID = 512

// PushCursor is where a page of configs starts: after the config created
// at Created with ID.
type PushCursor struct {
	Created int64 // microseconds since the epoch
	ID      string
}

// String is the cursor's page token.
func (c PushCursor) String() string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.Created, 10) + "/" + c.ID))
}

// ParsePushToken reads a page token; a malformed one is ErrInvalidParams.
func ParsePushToken(token string) (PushCursor, error) {
	bad := func(why string) (PushCursor, error) {
		return PushCursor{}, fmt.Errorf("%w: pageToken is not a token this server gave (%s): give the nextPageToken of the page before, or none", a2a.ErrInvalidParams, why)
	}
	if len(token) > MaxPushToken {
		return bad("too long")
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return bad("not base64url")
	}
	micros, id, ok := strings.Cut(string(b), "/")
	if !ok || id == "" || len(id) > MaxPushID {
		return bad("no config id")
	}
	created, err := strconv.ParseInt(micros, 10, 64)
	if err != nil || created < 0 || micros != strconv.FormatInt(created, 10) {
		return bad("no time")
	}
	return PushCursor{Created: created, ID: id}, nil
}
