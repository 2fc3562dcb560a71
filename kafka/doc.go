// Package kafka is linkd's Kafka adapter: everything that carries recorded
// events between processes, over Watermill (watermill-kafka, Sarama).
//
//   - config.go: Config, its defaults and checks, and the Sarama settings
//     of linkd's producers, consumers and admin clients;
//   - codec.go: the message codec (single-event and batch messages) and the
//     topic of a category (linkd.<category>);
//   - pubsub.go: the publisher (keyed by stream; Partitioned), the subscriber of a
//     consumer group, topic creation;
//   - relay.go: the relay, which publishes the global log to Kafka from its
//     checkpoint (checkpoint.go: in a file, in memory, or in the event store
//     when many instances share it; relay_queue.go: its workers' queues
//     and the tracker of what they acknowledged);
//   - runner.go: the Runner, which feeds projectors from Kafka, a consumer
//     group each, named after the projector;
//   - groupwatch.go: GroupWatch, how far a consumer group has consumed;
//   - pipeline.go: the Pipeline, an instance's share of the whole
//     (ADR 0106): its own read models fed in process, the shared ones from
//     Kafka with a follower moving their watermarks, and the relay while
//     the instance holds the relay's lease. cmd/linkd/app only wires it.
//
// Only what crosses a process travels here: in process,
// projections.LocalRunner hands projectors the events themselves.
package kafka
