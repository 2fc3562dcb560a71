// Package kafka is linkd's Kafka adapter: everything that carries recorded
// events between processes, over Watermill (watermill-kafka, Sarama).
//
//   - config.go: Config, its defaults and checks, and the Sarama settings
//     of linkd's producers, consumers and admin clients;
//   - codec.go: the message codec (single-event and batch messages) and the
//     topic of a category (linkd.<category>);
//   - pubsub.go: the publisher (keyed by stream), the subscriber of a
//     consumer group, topic creation;
//   - relay.go: the relay, which publishes the global log to Kafka from its
//     checkpoint (checkpoint.go: in a file or in memory);
//   - runner.go: the Runner, which feeds projectors from Kafka, a consumer
//     group each, named after the projector;
//   - groupwatch.go: GroupWatch, how far a consumer group has consumed.
//
// Only what crosses a process travels here: in process,
// projections.LocalRunner hands projectors the events themselves.
package kafka
