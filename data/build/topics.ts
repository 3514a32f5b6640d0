// The topic lexicon of the embedded grounding rule (grounding.ts; data/build/README.md): the
// areas of a person's life that personalization rubrics and personas talk about, each with the
// words that name it. Porter stems cannot see that "medical conditions" and "health: type 2
// diabetes" speak of the same thing, or "income stability" and "occupation: teacher"; a shared
// topic can. The areas follow the profile attributes PDR-Bench collects (its persona schema:
// demographics, occupation and education, health, finances, family, home, lifestyle and
// hobbies, diet, mobility and travel, technology use, schedule, location, language) and the
// rubric dimensions they serve. A word may name more than one topic. The list is the stand-in's
// knowledge and says so: the paper's builder is an LLM, which needs none.
import { stemOf } from './text.ts';

const TOPIC_WORDS: Record<string, string> = {
  health:
    'health healthy medical medicine medication medications medicines condition conditions illness disease chronic diagnosis diagnosed symptoms pain injury surgery replacement allergy allergies asthma diabetes blood pressure heart doctor physician therapy physiotherapy prescription drug drugs vision eyesight hearing disability disabilities pharmacy inhaler',
  mobility: 'mobility walking walk walks stairs steps wheelchair cane accessible accessibility barrier physical limitations limitation knee hip joint',
  fitness:
    'exercise exercises fitness sport sports workout workouts gym running swimming cycling football tennis yoga hiking physical activity activities active',
  diet: 'diet dietary food foods meal meals eat eats eating vegan vegetarian allergy allergies restaurant restaurants cuisine cooking cook nutrition lactose gluten halal kosher',
  budget: 'budget budgets money spend spending spends cost costs price prices afford affordable expensive cheap finances',
  income: 'income incomes salary salaries wage wages earnings earn stipend employment employed spend spends afford',
  savings: 'savings saving save saves fund funds goal goals finances',
  investment: 'invest invests investing investment investments stocks shares bonds portfolio risk tolerance',
  retirement: 'retire retired retirement pension pensions',
  debt: 'loan loans debt debts mortgage credit',
  work: 'work works working job jobs occupation career employment employed employer profession professional teacher engineer physician nurse designer developer manager owner business company agency office colleague colleagues',
  family:
    'family families household partner married husband wife spouse children child kids son daughter daughters sons teenagers parents parent grandchildren dependents depend depends widower widow single',
  home: 'home homes house housing flat apartment condo building buildings rent rents rented renting own owns owned landlord tenant property',
  heating: 'heating heater heaters boiler furnace radiator radiators insulation heat pump thermostat',
  travel:
    'travel travels traveling travelling trip trips transport transportation commute commuting drive drives driving car cars train trains bus buses flight flights fly bike cycle cycles cycling visits abroad portability portable',
  technology:
    'technology technical tech digital computer computers laptop laptops tablet phone smartphone smartphones apps app software devices device online internet',
  schedule: 'schedule schedules calendar weekly daily weekday weekend weekends shift shifts hours availability commitments appointment appointments',
  hobbies: 'hobby hobbies interests interest leisure club clubs reading music gardening games volunteering',
  learning: 'education study studies studying student course courses degree school university learning learn certificate skills',
  location: 'city region country location climate local neighbourhood neighborhood',
  sleep: 'sleep sleeping insomnia rest night nights tired fatigue',
  goals: 'goal goals plan plans planning aim aims want wants wish hope hopes dream target targets',
};

/** topic -> its Porter stems. */
export const TOPICS: ReadonlyMap<string, ReadonlySet<string>> = new Map(
  Object.entries(TOPIC_WORDS).map(([topic, words]) => [topic, new Set(words.split(/\s+/).map((w) => stemOf(w.toLowerCase())))]),
);

/** The topics a stem names (empty when none). */
export function topicsOfStem(stem: string): string[] {
  const out: string[] = [];
  for (const [topic, words] of TOPICS) if (words.has(stem)) out.push(topic);
  return out;
}

/** The topics any of `stems` names. */
export function topicsOf(stems: ReadonlySet<string>): Set<string> {
  const out = new Set<string>();
  for (const [topic, words] of TOPICS) for (const s of stems) if (words.has(s)) out.add(topic);
  return out;
}
