package openai_test

import (
	"github.com/batonhq/baton/internal/servertest"
	"github.com/batonhq/baton/server"
	"github.com/batonhq/baton/server/openai"
)

func init() { servertest.Protocols = []server.Protocol{openai.Protocol{}} }
