// Package merge decides one option from the replies of a parallel state's
// branch agents: the conflict resolution for parallel-merge hand-offs
// (parallel hand-offs).
//
// Each branch agent's reply names the option it chose (OptionOf reads it,
// with a confidence, from the agent's result map); Decide merges the replies
// with the strategy written in the workflow's `merge:` key:
//
//   - priority: the reply with the highest priority (lowest rank on the
//     workflow scale, 1 critical to 10 low, 0 meaning normal) wins; when the
//     top-ranked replies disagree the strategy cannot decide.
//   - first: the earliest reply (lowest Order) wins; it always decides.
//   - hierarchy: the reply of the highest-level agent (lowest Voter.Level,
//     the agent's position in the state's `agents` list) wins; agents the
//     workflow does not declare rank below every declared agent, and
//     disagreeing agents on the same level cannot be decided between.
//   - majority: the option chosen by more than half of the votes cast wins;
//     otherwise the strategy cannot decide.
//   - unanimous: every vote cast chooses the same option, or the strategy
//     cannot decide.
//   - weighted_vote: each reply weighs 0.5 × expertise + 0.3 × confidence +
//     0.2 × historical accuracy and the option with the greatest
//     total weight wins; a tie at the top cannot be decided.
//
// A reply whose option is empty abstains: it is no vote for or against any
// option (majority counts only the votes cast), yet weighted_vote still lists
// its weight. When every reply abstains no strategy can decide.
//
// The Decision says which option won, how the votes fell, whether the replies
// disagreed (Conflict) and whether the strategy could decide (Resolved); the
// engine turns an unresolved decision into the outcome `conflict` and exposes
// Decision.Map to rules as `result.decision`.
//
// Decide is a pure function: it is safe for concurrent use and its result
// never depends on the order of the replies, only on their content.
package merge
