// A released-checkpoint clarifier behind an OpenAI-compatible endpoint (method §8.5; paper Table
// 7: "their native interaction outputs are mapped to the common Ask/Stop interface"). Each agent
// renders the dialogue so far in its own native format, calls its endpoint, and maps what its
// model wrote to one turn: Ask (a question for the user), Stop (the refined query q*), or an
// invalid turn (nothing it could map). It sees the query and the dialogue only: no profile, no
// memory (Table 7: test-time user state "None").

export interface DialogueTurn {
  question: string;
  answer: string;
  /** The agent's own reply that asked the question, as its model wrote it (a native prompt replays it). */
  raw: string;
}

export type ExternalTurn = { action: 'ASK' | 'STOP'; execute: string; thought: string; raw: string } | { action: 'INVALID'; detail: string; raw: string };

export interface ExternalAgent {
  /** The method's name in reports (paper Table 2). */
  readonly label: string;
  /** The checkpoint's name on its server. */
  readonly model: string;
  /**
   * The next turn after `dialogue` (question-answer pairs so far). `last`: the turn budget
   * (rollout.maxTurns) is spent after this turn; an agent that can still end with a q* does so.
   */
  turn(query: string, dialogue: readonly DialogueTurn[], last: boolean, seed: number): Promise<ExternalTurn>;
}
