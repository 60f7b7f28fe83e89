package pgbroker

import "time"

// SetWatchTTL sets how long b's subscriptions' rows hold without renewal
// (renewed every d/3); call it before b's first subscription.
func SetWatchTTL(b *Broker, d time.Duration) { b.ttl = d }
