// The policy-turn caps (bytes per field, slot lines, whitespace outside fields) and the
// shortest turn they allow. gsteer serve's policy filter enforces them
// (structured/policy-filter.ts); configs/schema.ts checks rollout.maxTokens against
// policyMinTokens(). Caps from the demo's SFT targets (`gsteer sft build`, 797 targets,
// bytes: max name 20, purpose 57, value 116, plan 224, execute 922, slots 10) with room to
// spare; a field's bytes include its surrounding spaces.
import { TurnCursor, type TurnCaps } from './cursor.ts';

export const POLICY_CAPS: TurnCaps = { name: 48, purpose: 96, value: 192, plan: 320, execute: 1024, slots: 16, slack: 32 };

/** No TurnCursor.completion() is longer (the longest: a slot line cut after "-", ~100 bytes; tested). */
export const MAX_COMPLETION = 160;

/** The smallest max_tokens a filtered turn fits in: the shortest turn plus EOS. */
export function policyMinTokens(caps: TurnCaps = POLICY_CAPS): number {
  return new TurnCursor(caps).completion().length + 1;
}
