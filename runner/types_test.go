package runner_test

import (
	"context"
	"iter"

	"github.com/batonhq/baton/model"
)

type (
	modelRequest = model.Request
	modelChunk   = model.Chunk
	modelSeq     = iter.Seq2[model.Chunk, error]
)

type modelFunc func(ctx context.Context, req *modelRequest) modelSeq

func (f modelFunc) Stream(ctx context.Context, req *modelRequest) modelSeq { return f(ctx, req) }
