// CEP-Clarify+Rewrite (paper "Prior clarification": it "adapts CEP's iterative clarification and
// uses Qwen3-8B to rewrite the dialogue history into the final query"). CEP's clarification
// consultant (Zhang et al. 2024, Ask-before-Plan: src/clarification/consultant.py, the "direct"
// prompts) is a chat model asked, each turn, whether the user's request needs clarification
// given the conversation and the interaction trajectory (its tool calls; this setting has no
// tools, so it is "(none)"); its first yes/no decides (its release's extract_binary_answer: the
// earlier of "yes" and "no" in the reply, neither = no). Yes: it is told "Yes." is its answer and
// asked for one clarification question, which is the Ask. No: Stop, and the rewriter (Qwen3-8B
// over chat completions, thinking off) writes q* from the query and the dialogue. On the last
// turn of the budget the consultant is not asked: the dialogue is rewritten (the rewrite is a
// separate model, so a capped dialogue still gets its q*). The conversation is rendered as its
// release renders it: a Python list of {role: text} dicts.
import type { ExternalBaselinesConfig } from '../../configs/baselines.ts';
import type { ChatMessage, Endpoint } from '../../endpoints/index.ts';
import type { DialogueTurn, ExternalAgent, ExternalTurn } from './agent.ts';

export const CEP_SYSTEM =
  "Your current task is to determine the user's intentions and satisfy their needs based on the provided conversation between the user and the assistant, along with the interaction trajectory involving tool use between the agent and the environment. " +
  'If certain tools are not called in the interaction trajectory, it indicates a lack of the required parameters needed to call those tools. ' +
  'Note that if the user does not specify a detail in the initial query, it indicates that the user does not have specific preferences that need clarification in the following conversation.';
export const CEP_DECIDE = (conversation: string, trajectory: string) =>
  `Conversation: ${conversation}\nInteraction trajectory: ${trajectory}\nPlease determine whether the user's request needs clarification. A request needs clarification if the user's intention contains missing or unfeasible details based on the tool parameters and call results in the interaction trajectory. If the user's intention requires clarification, answer "Yes"; if it is clear and feasible, answer "No".\nAnswer:`;
export const CEP_ASK =
  'Please ask the user one clarification question to gather more information about a specific detail. Do not attempt to solve the task.\nQuestion:';
export const REWRITE_SYSTEM =
  "You rewrite a user's research request into the final query for a deep-research agent, using the clarification dialogue that followed it. Keep the original intent and state every detail the user gave in the dialogue; add nothing the user did not say. Answer with the rewritten query only, as one paragraph.";

/** A Python string literal as repr() writes it (single quotes unless the text has one and no double quote). */
function pyStr(s: string): string {
  const q = s.includes("'") && !s.includes('"') ? '"' : "'";
  const body = s.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/\r/g, '\\r').replace(/\t/g, '\\t');
  return q + (q === "'" ? body.replace(/'/g, "\\'") : body) + q;
}

/** The conversation as CEP's release passes it: [{'user': query}, {'assistant': question}, {'user': answer}, ...]. */
export function cepConversation(query: string, dialogue: readonly DialogueTurn[]): string {
  const msgs = [
    ['user', query],
    ...dialogue.flatMap((d) => [
      ['assistant', d.question],
      ['user', d.answer],
    ]),
  ];
  return `[${msgs.map(([role, text]) => `{${pyStr(role as string)}: ${pyStr(text as string)}}`).join(', ')}]`;
}

/** Its release's extract_binary_answer: the earlier of "yes" / "no" (lowercased) wins; neither is no. */
export function needsClarification(reply: string): boolean {
  const t = reply.toLowerCase();
  const yes = t.indexOf('yes');
  const no = t.indexOf('no');
  return yes !== -1 && (no === -1 || yes < no);
}

const oneLine = (s: string) => s.replace(/\s+/g, ' ').trim();

export class CepAgent implements ExternalAgent {
  readonly label = 'CEP-Clarify+Rewrite';
  readonly model: string;

  constructor(
    private readonly c: ExternalBaselinesConfig['cep'],
    private readonly consultant: Endpoint,
    private readonly rewriter: Endpoint,
  ) {
    this.model = c.model;
  }

  async turn(query: string, dialogue: readonly DialogueTurn[], last: boolean, seed: number): Promise<ExternalTurn> {
    if (!last) {
      const messages: ChatMessage[] = [
        { role: 'system', content: CEP_SYSTEM },
        { role: 'user', content: CEP_DECIDE(cepConversation(query, dialogue), '(none)') },
      ];
      const sampling = { temperature: this.c.temperature, maxTokens: this.c.maxTokens, seed };
      const decision = (await this.consultant.chat({ messages, ...sampling })).text;
      if (needsClarification(decision)) {
        const asked = (
          await this.consultant.chat({ messages: [...messages, { role: 'assistant', content: 'Yes.' }, { role: 'user', content: CEP_ASK }], ...sampling })
        ).text;
        const question = oneLine(asked);
        if (!question) return { action: 'INVALID', detail: 'the consultant asked an empty question', raw: `${decision}\n${asked}` };
        return { action: 'ASK', execute: question, thought: oneLine(decision), raw: question };
      }
      return this.rewrite(query, dialogue, oneLine(decision));
    }
    return this.rewrite(query, dialogue, 'turn budget spent: rewrite');
  }

  private async rewrite(query: string, dialogue: readonly DialogueTurn[], thought: string): Promise<ExternalTurn> {
    const history = dialogue.length ? dialogue.map((d) => `Assistant: ${d.question}\nUser: ${d.answer}`).join('\n') : '(no clarification was asked)';
    const r = this.c.rewriter;
    const text = (
      await this.rewriter.chat({
        messages: [
          { role: 'system', content: REWRITE_SYSTEM },
          { role: 'user', content: `Original request: ${query}\nDialogue:\n${history}` },
        ],
        temperature: r.temperature,
        topP: r.topP,
        maxTokens: r.maxTokens,
      })
    ).text;
    const q = oneLine(text);
    return q ? { action: 'STOP', execute: q, thought, raw: text } : { action: 'INVALID', detail: 'the rewriter wrote an empty query', raw: text };
  }
}
