// Package model defines the one interface every model provider implements,
// [Model], and the request, chunk and error types shared by the runner and
// the adapters in the sub-packages (openaimodel, anthropicmodel, scripted).
package model
