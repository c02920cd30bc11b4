"""Constraints: what the user must never be offered, and which requests each one bears on.

"I'm allergic to mango" on Monday must stop dried mango on Friday, whatever the retrieval
ranking says about Friday's question ("Suggest a snack for the office party" shares no word
with the allergy, and e5 scores it below the user's hobbies). So a memory that states an
allergy, a diet, a dislike of something or a standing "never ..." is marked as a constraint
when it is written (``constraint_kind``), and a request it bears on (food, drink, medicine, an
activity, a trip, how to answer) gets every such memory of the user, beside whatever ranked.

Kinds: ``allergy`` (and intolerances), ``medical`` (a condition or medicine that rules things
out), ``diet`` (vegetarian, halal, no pork, no alcohol), ``dislike`` ("I hate cilantro"),
``instruction`` ("never suggest meat", "don't call me before 9"), ``trait`` (a lasting trait
that limits what suits the user: a height, colour blindness, a night owl, a computer platform;
it bears only on requests of its own topic, ``trait_topics``).
"""
from __future__ import annotations

import re
from functools import lru_cache

from memory_core.text.intent import clause_kind, is_question, statement_part
from memory_core.text.subject import subject_of

_I = re.IGNORECASE

_ALLERGY = re.compile(r"过敏|不耐受|乳糖不耐|\ballerg|\bintoleran|\banaphyla|\bceliac\b|\bcoeliac\b|\bepi-?pen\b", _I)
_NOT_ALLERGIC = re.compile(r"不过敏|没有过敏|不再过敏|\bnot allergic\b|\bno (?:known )?allergies\b|\bisn'?t an allergy\b|"
                           r"\bno longer allergic\b|\boutgrew (?:my|the) allergy\b", _I)
# An allergy told as over: "I was allergic to cats as a kid but outgrew it", "我以前对猫毛过敏 长大就好
# 了". Only that span is set aside: "..., still allergic to peanuts though" and "但是对花生还是过敏"
# still state one, and "my sister outgrew hers" or "好了点" (better, not gone) end none.
_ALLERGY_OVER = re.compile(
    r"\ballergic\b[^.!?,;]{0,40}\b(?:outgrew|grew out of) (?:it|them|that|the allergy|my allergy)\b|"
    r"\b(?:used to be|was) allergic\b[^.!?;]{0,40}\b(?:not any ?more|anymore|no longer)\b|"
    r"(?:以前|曾经|小时候|原来)[^。！？，,]{0,10}过敏[^。！？]{0,6}?(?:[，,\s]|但|不过)+(?:现在|后来|长大)?(?:了|以后|后)?"
    r"(?:就|都|已经)?(?:好了|没事了|不过敏了|没有了|痊愈了?|消失了)(?![点些])", _I)
_MEDICAL = re.compile(r"糖尿病|高血压|痛风|孕期|怀孕|哺乳|肾病|胃溃疡|心脏病|心律不齐|哮喘|癫痫|不能吃药|禁用|医生(?:说|让|不让|叮嘱)|"
                      r"\bdiabet|\bpregnan|\bgout\b|\bbreastfeeding\b|\bkidney disease\b|\bblood thinners?\b|"
                      r"\bwarfarin\b|\bhypertension\b|\barrhythmia\b|\bheart condition\b|\basthma\b|\bepilep|"
                      r"\b(?:doctor|cardiologist|dentist|physio|physiotherapist|nutritionist|dietitian) (?:told|said|says|wants)\b|"
                      r"\binjur(?:y|ed)\b|\bsprain|\bfracture|\bbroken (?:leg|arm|ankle|wrist)\b|受伤|骨折|扭伤|"
                      r"\bdeaf\b|\bhard of hearing\b|\bhearing aid\b|\bwheelchair\b|(?<!colour-)(?<!color-)(?<!colour )(?<!color )\bblind\b|"
                      r"耳聋|聋|听力|轮椅|失明", _I)
# Foods a "cannot eat" said by the verb's complement names (whole words: not 蛋糕, 生活, 苦, 亏).
_FOODS_ZH = "辣|酒|白酒|啤酒|海鲜|牛奶|奶|乳制品|羊肉|牛肉|猪肉|肉|香菜|葱|姜|蒜|鸡蛋|蛋|冰的|凉的|生冷|甜的|花生|坚果|虾|蟹|咖啡|鱼|麸质"
_DIET = re.compile(
    r"吃素|素食|清真|不吃猪肉|不吃牛肉|不吃肉|不吃海鲜|不吃辣|不能吃辣|不喝酒|戒酒|滴酒不沾|忌口|不吃(?:葱|姜|蒜|香菜|鸡蛋|奶)|"
    r"\bvegetarian\b|\bvegan\b|\bpescatarian\b|\bhalal\b|\bkosher\b|\bgluten[- ]free\b|\bdairy[- ]free\b|"
    r"\bno (?:pork|beef|meat|alcohol|dairy|gluten|sugar|caffeine|coffee|salt|red meat|shellfish|nuts)\b|\bketo\b|"
    r"\bsober\b|\bdon'?t drink(?: alcohol)?\b|不能(?:喝|吃)|不喝咖啡|不碰|"
    # "can't" said by the verb's complement: "我吃不了辣", "一点辣都吃不了", "海鲜碰不得" (not "这么多我吃不了",
    # "吃不了苦", "吃不了兜着走": too much, hardship, an idiom)
    rf"一(?:点|口|滴)(?:{_FOODS_ZH})都(?:吃|喝|碰|沾)不(?:了|得)(?!了)|(?:{_FOODS_ZH})我?(?:一点)?(?:都|也)?(?:碰|沾)不得|"
    rf"(?:吃|喝)不(?:了|得)(?:{_FOODS_ZH})(?![\u4e00-\u9fff]|了)|(?:吃|喝)不(?:了|得)(?:{_FOODS_ZH})的|"
    r"\bI (?:don'?t|do not|never|no longer|can'?t|cannot) (?:eat|touch) (?!much\b|a lot\b|breakfast\b|lunch\b|dinner\b)\w+|"
    # "have" only with a food: "I don't have a driver's license" is no diet
    r"\bI (?:don'?t|do not|never|no longer|can'?t|cannot) have (?:any )?(?:dairy|gluten|meat|pork|beef|sugar|caffeine|"
    r"alcohol|nuts|shellfish|eggs|milk|cheese|wheat|soy|carbs|bread|rice|pasta|sweets|spicy food)\b", _I)
_DISLIKE = re.compile(r"讨厌|受不了|不喜欢|最怕|恶心|\bI (?:really |absolutely |just |truly )?(?:hate|can'?t stand|despise|"
                      r"loathe|dislike)\b|\bI (?:really )?(?:don'?t|do not) (?:like|enjoy|want)\b|\bgross(?:es)? me out\b|"
                      r"\bmakes me (?:gag|sick)\b|\btastes? like soap\b|\bterrified of\b|\bscared of\b|\bafraid of\b|"
                      r"(?<![哪可])怕", _I)
# A fear of a thing or an activity ("I'm scared of heights", "Heights terrify me", 恐高): it rules
# out suggestions as a dislike does ("Should I book the glass-floor skywalk?"). Named phobias
# only: "I'm afraid I can't come" and "scared of losing my job" rule nothing out.
_FEAR_OBJECTS = (r"heights?|flying|planes?|airplanes?|deep water|water|the dark|darkness|needles?|injections?|spiders?|"
                 r"snakes?|dogs?|crowds?|enclosed spaces|small spaces|elevators?|lifts?|tunnels?|bridges?|clowns?|"
                 r"roller ?coasters?|public speaking")
_FEAR = re.compile(
    r"\b(?:terrified|scared|afraid|frightened) (?:to death )?of (?:the )?(?:" + _FEAR_OBJECTS + r")\b|"
    r"\b(?:" + _FEAR_OBJECTS + r") (?:really )?(?:terrif(?:y|ies)|scares?|frightens?) me\b|"
    r"\b(?:acro|claustro|aero|arachno|aqua|cyno|trypano)phobi\w*|\bfear of (?:" + _FEAR_OBJECTS + r")\b|"
    r"(?<!\bovercame my )(?<!\bgot over my )(?<!\bused to have a )(?<!\bhad a )(?<!\babout )"
    r"\bphobi(?:a|c) (?:of|about|around) (?:the )?(?:" + _FEAR_OBJECTS + r")\b|\b(?:" + _FEAR_OBJECTS + r") phobia\b|"
    r"恐高|(?<![哪可不])怕(?:高|水|黑|打针|蛇|狗|坐飞机)|晕高|恐飞|幽闭恐惧|密集恐惧|社恐", _I)
# A fear said to be over, or denied: no constraint ("I'm not afraid of heights anymore", 我以前恐高，
# 现在不怕了, "I overcame my fear of flying").
_FEAR_LIFTED = re.compile(
    r"\b(?:not|no longer|never been|n't) (?:\w+ ){0,2}(?:afraid|scared|terrified|frightened)\b|"
    r"\b(?:overcame|overcome|over|conquered|beat|got past) (?:my |the )?fear\b|\bnot (?:\w+ )?phobic\b|"
    r"不(?:再)?怕|不恐|(?:以前|曾经|小时候)(?:很|特别)?(?:恐|怕)[^，。,.!?！？]{0,6}[，,]?\s*(?:现在|后来|如今)|克服了", _I)
_INSTRUCTION = re.compile(
    r"(?:永远|千万|以后|今后|再也)?(?:不要|别|不许|不准)(?:再)?(?:给我|跟我|帮我|向我)?(?:推荐|建议|安排|订|提|发|打电话|叫我|用)|"
    r"\b(?:never|don'?t ever|do not ever|please don'?t|please do not|don'?t|do not)\s+(?:\w+\s+){0,2}"
    r"(?:suggest|recommend|book|schedule|call|text|message|mention|offer|order|remind|plan|send|use)\b", _I)
# Statements that lift a diet rather than state one ("I'm no longer vegetarian", "我又开始吃肉了").
_REVOKED = re.compile(r"\b(?:no longer|not|stopped being|quit being) (?:a )?(?:vegetarian|vegan|pescatarian)\b|"
                      r"\b(?:off|quit|stopped|done with|gave up) (?:the |my )?(?:keto|paleo|atkins|whole30|low-carb|"
                      r"vegan|vegetarian|gluten-free|diet)\b|"
                      r"\b(?:eat|eating|drink|drinking|have|having) \w+ again\b|\bback to eating meat\b|"
                      r"\bgave up (?:being )?(?:vegetarian|vegan|pescatarian)\b|不再吃素|不吃素了|开始吃肉|又吃肉|恢复吃(?:肉|荤)|开荤了|"
                      r"(?:吃素|素食)(?:这条路|这件事)?(?:只能)?(?:先)?放弃了|"
                      r"又(?:开始)?(?:吃|喝)|现在(?:又)?(?:可以|能)(?:吃|喝)|"
                      # "现在中辣随便吃", "I can handle spicy food now"
                      r"现在(?:(?![不没别])[^，,。！!？?\s]){0,4}(?<![不没别])(?:随便吃|随便喝|敢吃|吃得了|喝得了|能吃|能喝)|"
                      r"\bcan (?:eat|handle|have|drink|take) [\w ]{1,20}\b(?:now|these days)\b|"
                      r"\bnow i can (?:eat|handle|have|drink|take)\b", _I)

# Lasting traits that limit what suits the user, each with the topics it bears on: a height on the
# size of a bike frame or a seat, colour blindness on an outfit's colours, a night owl on the hours
# of a schedule, the computer a user has always used on a new one. Unlike a dislike they rule
# nothing out by name, so they bear only on requests of their own topic. Said of the user in the
# present and plainly ("I'm 6'4\"", 我是个夜猫子, "I'm colour-blind"): a wrongly read trait would be
# kept for good, so idioms, one day's plan, other senses of "short" and past or negated traits
# ("I used to be a night owl", 我不是果粉) are none.
_I_AM = r"\bI(?:'m|’m| am)\s+"
_TRAITS: tuple[tuple[re.Pattern[str], frozenset[str]], ...] = (
    (re.compile(_I_AM + r"(?:about |almost |nearly )?[4-7]\s?(?:'|’|ft\b|feet\b|foot\b)\s?\d{0,2}|"
                + _I_AM + r"(?:about )?(?:1[4-9]\d|2[01]\d)\s?cm\b|"
                r"我(?:的)?身高(?:有|是)?(?:一米|1米|1\.|[12]\d\d)|我(?:有)?一米[五六七八九][几多]?(?:的个子|高|[，,。])", _I),
     frozenset({"fit"})),
    (re.compile(r"我(?:有点|有些|是|天生|一直)?(?:色弱|色盲|红绿色盲)|" + _I_AM + r"(?:(?!not\b|no\b|never\b)\w+ )?(?:red[- ]green )?colou?r[- ]?blind\b",
                _I), frozenset({"colours"})),
    (re.compile(r"我(?:是|就是|一直是)(?:个|一个)?(?:夜猫子|早起的人|晨型人)|" + _I_AM
                + r"(?:a |an )(?:real |total |big )?(?:night owl|early bird|morning person)\b", _I), frozenset({"hours"})),
    (re.compile(_I_AM + r"(?:a |an )(?:\w+ )?(?:Mac|Windows|Linux|PC) user\b|"
                r"\bI(?:'ve|’ve| have) (?:always )?been an? (?:\w+ )?(?:Mac|Windows|Linux|PC) user\b|"
                r"我(?:是|一直是)(?:个)?果粉|我一直(?:都)?用(?:苹果电脑|Mac|mac|Windows|windows)", _I), frozenset({"devices"})),
)


def trait_topics(text: str) -> frozenset[str]:
    """The topics the lasting traits ``text`` states of the user bear on (empty: it states none;
    "my wife is a night owl" is hers)."""
    found = frozenset(topic for pattern, topics_ in _TRAITS if pattern.search(text) for topic in topics_)
    # the subject is read only when a trait is named (jieba's tagger costs a write's time)
    if not found or subject_of(text).rsplit("/", 1)[-1] != "self":
        return frozenset()
    return found


def revokes_a_diet(text: str) -> bool:
    """The text lifts a diet rather than states one ("I'm no longer vegetarian", "I'm off keto",
    "我又开始吃肉了")."""
    return _REVOKED.search(text) is not None


# Topics a constraint or a request is about. A request gets the constraints that share a topic.
_TOPICS: dict[str, re.Pattern[str]] = {
    "food": re.compile(
        r"吃|饭|餐|菜|食|零食|小吃|点心|甜点|甜品|糕点|冰淇淋|冰激凌|雪糕|布丁|面包|水果|下午茶|宵夜|糖水|蛋糕|早餐|午餐|晚餐|夜宵|外卖|菜谱|食谱|做饭|下厨|烘焙|烤|餐厅|饭店|馆子|火锅|烧烤|"
        r"芒果|花生|坚果|海鲜|虾|蟹|鱼|肉|牛|猪|鸡|蛋|奶|乳|麸质|小麦|大豆|香菜|辣|素|清真|葱|姜|蒜|"
        r"做菜|炒|炖|煮|蒸|凉拌|拌|煎|汤|粥|面条|饺子|黄瓜|番茄|西红柿|土豆|豆腐|"
        r"\b(?:eat|eating|food|foods|meal|meals|dinner|lunch|breakfast|brunch|snack|snacks|desserts?|cakes?|cookies?|"
        r"sweets|fruits?|ice cream|pudding|pastr(?:y|ies)|bread|"
        r"recipe|recipes|cook|cooking|bake|baking|restaurant|restaurants|dish|dishes|menu|takeout|takeaway|"
        r"cuisine|barbecue|bbq|grill|potluck|picnic|party|treat|treats|mango|peanut|peanuts|nut|nuts|shellfish|"
        r"seafood|shrimp|fish|meat|pork|beef|chicken|egg|eggs|dairy|milk|cheese|gluten|wheat|soy|sesame|"
        r"vegetarian|vegan|halal|kosher|spicy|cilantro|garlic|onion|sushi|pizza|burger|salad|sandwich|"
        r"allergic|allergy|allergies|diet|mushrooms?|olives?|tomato(?:es)?|onions|coriander|eggplants?|aubergines?|"
        r"tofu|liver|anchov(?:y|ies)|pickles?|broccoli|celery|durian|avocados?|beans|oysters?|mayo|mayonnaise|"
        r"toppings?|taste|tastes|texture|flavou?rs?|smell of)\b|"
        r"蘑菇|香菇|茄子|苦瓜|榴莲|芹菜|肥肉|内脏|韭菜|洋葱|茴香|折耳根|臭豆腐|味道|口感", _I),
    "drink": re.compile(
        r"喝|饮|酒|咖啡|茶|奶茶|果汁|可乐|饮料|饮品|啤酒|红酒|白酒|鸡尾酒|"
        r"\b(?:drink|drinks|drinking|beverage|beverages|coffee|tea|latte|espresso|juice|soda|beer|wine|cocktail|"
        r"cocktails|alcohol|smoothie|milkshake|bar|pub|sober|caffeine)\b", _I),
    "medicine": re.compile(
        r"药|吃药|用药|处方|抗生素|青霉素|头孢|布洛芬|阿司匹林|感冒|发烧|头疼|头痛|咳嗽|嗓子|喉咙|疼|痛|医生|医院|看病|治疗|疫苗|"
        r"\b(?:medicine|medicines|medication|medications|drug|drugs|pill|pills|antibiotic|antibiotics|penicillin|"
        r"amoxicillin|ibuprofen|aspirin|painkiller|painkillers|prescription|doctor|pharmacy|vaccine|cold|flu|fever|"
        r"headache|cough|sore|pain|treatment|allergic|allergy|allergies)\b", _I),
    "activity": re.compile(
        r"玩|活动|运动|锻炼|周末|爬山|徒步|游泳|跑步|健身|旅行|旅游|出游|景点|度假|订|酒店|机票|航班|行程|约会|礼物|电影|"
        r"\b(?:activity|activities|weekend|hike|hiking|swim|swimming|run|running|gym|workout|exercise|sport|sports|"
        r"trip|travel|travelling|traveling|vacation|holiday|hotel|flight|flights|book|booking|itinerary|plan|"
        r"date|gift|gifts|present|movie|movies|outing|visit|tour|things to do|meet people|make friends|meetups?|"
        r"social life|volunteer|volunteering|clubs?|hobby|hobbies|"
        # what a fear rules out is an activity: "heights" bears on a skywalk trip, not on a recipe
        r"heights?|flying|fly|planes?|roller ?coasters?|ladders?|skywalks?|bungee|cliffs?|rooftops?|"
        r"observation decks?|ferris wheel|zip ?lines?|climbing|scuba|diving|caves?|caving)\b|"
        r"恐高|怕高|晕高|高空|玻璃栈道|蹦极|过山车|摩天轮|观景台|坐飞机|飞机|潜水|攀岩|索道|怕水|怕黑|恐飞|"
        r"交朋友|认识(?:新)?朋友|认识人|社交|兴趣班|志愿者|社团", _I),
    "animals": re.compile(
        r"宠物|狗|猫|兔|仓鼠|鹦鹉|动物|养只|领养|"
        r"\b(?:pet|pets|dog|dogs|puppy|puppies|cat|cats|kitten|kittens|rabbit|hamster|parrot|animal|animals|"
        r"zoo|farm|adopt|adoption)\b", _I),
    # what a height bears on: the size of a thing one rides or sits in
    "fit": re.compile(
        r"尺码|车架|自行车(?:尺寸|大小|型号)|座位(?:宽|窄|空间)|腿部空间|"
        r"\b(?:bike frame|frame size|road bike|mountain bike|bike size|bicycle|legroom|leg room|inseam|seat width)\b", _I),
    "colours": re.compile(r"颜色|配色|色系|撞色|\b(?:colou?rs?|colou?r scheme|palette)\b", _I),
    "devices": re.compile(r"电脑|\b(?:laptops?|computers?|macbook|desktop pc|notebook computer)\b", _I),
    # what a night owl or an early bird bears on: the hours of a plan
    "hours": re.compile(r"时间段|作息|几点(?:开始|起床|睡)|\b(?:time slots?|what time|which hours|hours|routine|timetable)\b", _I),
    "contact": re.compile(
        r"打电话|电话|短信|消息|联系|提醒|叫醒|称呼|叫我|早上|晚上|"
        r"\b(?:call|calls|calling|phone|text|texts|message|messages|email|emails|remind|reminder|wake|contact|"
        r"schedule|scheduling|meeting|meetings|appointment|appointments|before|after|morning|evening|night|"
        # planning a week or a day is scheduling: "never on Saturdays" bears on "plan my errands"
        r"plan|planning|errands|calendar|agenda|week|weekdays?|saturdays?|sundays?)\b|安排|日程|计划|周末|周六|周日", _I),
}
# Where to go and what to do with one's time: what any fear bears on ("make friends in a new city":
# dog parks; "a fun saturday in chicago": the skydeck), not a book, a gift or a film.
_OUTING = re.compile(r"\b(?:things to do|meet people|make friends|go out|day out|weekend|saturday|sunday|trip|travel|"
                     r"visit|explore|tour|outing|activities|sightseeing|hang ?out)\b|"
                     r"交朋友|认识(?:新)?朋友|周末|出去玩|去哪玩|逛|旅行|旅游|景点|约会", _I)
# Words that make a request (and not only a question about the user).
_REQUEST_WORDS = re.compile(
    r"推荐|建议|安排|计划|准备|做什么|吃什么|喝什么|玩什么|去哪|买什么|送什么|带什么|点什么|怎么做|有什么好|来点|想吃|想喝|"
    r"可以吃|能吃|能不能吃|可不可以吃|可以喝|能喝|订|帮我|给我|菜谱|食谱|教我|养什么|"
    r"\b(?:recommend|suggest|suggestion|suggestions|idea|ideas|plan|planning|book|order|make|cook|bake|bring|buy|"
    r"get|pick|choose|what should|what can|what could|should i|can i|could i|is it ok|is it safe|safe for me|"
    r"any good|good place|where to|what to|recipe|menu|invite|host|take me|treat)\b", _I)


# A question about what suits the user ("Is a trek to Everest Base Camp a good idea for me?",
# "跑马拉松适合我吗"): a medical condition bears on it whatever its topic, known or not.
_ABOUT_ME = re.compile(
    r"\b(?:for me|good idea|safe for me|ok for me|okay for me|should i|can i|could i|am i able|is it (?:ok|okay|safe|wise))\b|"
    r"适合我|对我|合适(?:吗|么|嘛|不)|我(?:能|可以|适合)[^。！？!?]{0,20}(?:吗|么|嘛)|我能不能|我可不可以|我该不该", _I)
_NO_ANSWER = re.compile(r"^\W*(?:no\b|nope\b|none\b|not really\b|nothing\b|not that i know|没有|没|不|无|并没有)", _I)


@lru_cache(maxsize=8192)  # pure; the write path and newer-wins (``ends_a_state``) ask it of the same texts
def constraint_kind(text: str, answering: str | None = None) -> str | None:
    """The kind of constraint ``text`` states (see the module docstring), or None. A question
    ("Am I allergic to anything?") states none; "I'm not allergic to penicillin after all"
    lifts one rather than stating it. ``answering`` is the question ``text`` replied to:
    "Peanuts." after "Any food allergies?" states an allergy; "No" states none."""
    kind = _kind_of(statement_part(text))
    if kind is None and _INSTRUCTION.search(text):
        # "别给我推荐星巴克" is a request by its form, so ``statement_part`` drops it from a message
        # that mixes it with others ("跟你说几件事 我在练半马 上夜班 还有以后别给我推荐星巴克"); it
        # is still the user's rule, unless the clause asks about one ("why do you never suggest X?").
        if any(_INSTRUCTION.search(c) and not is_question(c) for c in _CLAUSE.split(text) if c and c.strip()):
            return "instruction"
    if kind is not None or not answering or _NO_ANSWER.search(text):
        return kind
    return _kind_of(f"{answering} {text}")


def _kind_of(statement: str) -> str | None:
    if not statement:
        return None
    if _ALLERGY.search(_ALLERGY_OVER.sub(" ", statement)) and not _NOT_ALLERGIC.search(statement):
        return "allergy"
    if _INSTRUCTION.search(statement):
        return "instruction"
    revoked = _REVOKED.search(statement)
    if revoked is not None:
        clause = _CLAUSE.split(statement[revoked.start():], 1)[0]
        head = _CLAUSE.split(statement[:revoked.start()])[-1]
        if subject_of(head + clause).split("/")[-1] == "self":
            return None
        # "我老公恢复吃肉了，我还是吃素": another's diet lifted; the user's own still holds
        statement = (statement[:revoked.start() - len(head)] + statement[revoked.start() + len(clause):]).strip(" ，,")
        if not statement:
            return None
    if _DIET.search(statement):
        return "diet"
    if _MEDICAL.search(statement):
        return "medical"
    if _FEAR_LIFTED.search(statement):
        return None  # "I'm not afraid of dogs", 我不怕辣, "I overcame my fear of flying"
    if (_DISLIKE.search(statement) and any(p.search(statement) for p in _TOPICS.values())) or _FEAR.search(statement):
        return "dislike"
    if trait_topics(statement):
        return "trait"
    return None


@lru_cache(maxsize=8192)  # pure; a search asks it of the query and of each constraint
def topics(text: str) -> frozenset[str]:
    """The topics ``text`` touches (food, drink, medicine, activity, contact)."""
    return frozenset(name for name, pattern in _TOPICS.items() if pattern.search(text))


@lru_cache(maxsize=4096)  # pure; a search asks it once per constraint of the user
def asks_for_something(query: str) -> bool:
    """A request or a question a constraint could bear on ("Suggest a dinner recipe", "能吃辣吗",
    "what should I bring?"), not small talk or a question about a stored fact alone."""
    kinds = {clause_kind(part) for part in re.split(r"[。！？!?\n]", query) if part.strip()}
    return bool(kinds & {"request", "question"}) or _REQUEST_WORDS.search(query) is not None


def bears_on(constraint: str, query: str) -> bool:
    """Whether the constraint ``constraint`` (a memory's text) matters for answering ``query``:
    the query asks for something, and the two share a topic (an allergy to penicillin bears on
    "what should I take for my sore throat?", not on "suggest a hike"). Food and drink are one
    topic here (a mango allergy bears on a smoothie); a constraint whose topic the lexicon does
    not know, and a medical condition, bear on every request that has a topic (wrongly offered, a
    constraint costs a line of the prompt; wrongly withheld, it can cost the user's health); a
    request with none (a joke, a sum) gets none."""
    if not may_bear_on(query):
        return False  # a joke, a sum, a capital city: nothing a constraint rules out
    if _stated_without_a_topic(constraint):
        return True  # the rest of a long message does not narrow it: see ``_stated_without_a_topic``
    asked = _merge_food(topics(query))
    traits = trait_topics(constraint)
    mine = traits or _merge_food(topics(constraint))  # a trait bears on its own topics only
    if _FEAR.search(constraint) and _OUTING.search(query):
        mine |= {"activity"}  # a fear of dogs bears on where to go and what to do, not only on pets
    if not mine or _MEDICAL.search(constraint):
        return True
    return bool(mine & asked)  # a topicless question about the user gets only the above


_CLAUSE = re.compile(r"[。！？!?；;\n，,]|\band\b|\bbut\b|(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])", _I)


@lru_cache(maxsize=4096)
def _stated_without_a_topic(constraint: str) -> bool:
    """The clauses that state the constraint name no topic the lexicon knows, though the message
    around them does: "I'm training for a half marathon, I work nights at a hotel, and please
    never recommend Starbucks, I boycott them" is a constraint of no known topic (so it bears on
    every request with one, as a short "never recommend Starbucks" does), not one about running
    and nights. Only ever widens what a constraint bears on."""
    stating = [c for c in _CLAUSE.split(constraint) if c and c.strip() and _kind_of(c.strip()) is not None]
    return bool(stating) and not any(topics(c) or trait_topics(c) for c in stating) \
        and bool(topics(constraint) or trait_topics(constraint))


def may_bear_on(query: str) -> bool:
    """Whether any constraint can bear on ``query``: it asks for something and has a topic, or
    asks what suits the user (``_ABOUT_ME``: no lexicon names every activity, and asthma bears on
    "a trek to Everest Base Camp"). When not, ``bears_on`` is False for every constraint, so a
    search need not read them."""
    return asks_for_something(query) and (bool(topics(query)) or _ABOUT_ME.search(query) is not None)


def _merge_food(found: frozenset[str]) -> frozenset[str]:
    return frozenset("food" if t == "drink" else t for t in found)
