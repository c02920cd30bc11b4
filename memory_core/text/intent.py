"""Is a chat message something to remember, or only a question or request?

"我住在哪里？", "What's my phone number again" or "给我推荐点好吃的零食" carry nothing about the
user: storing them filled the store with questions, and a stored question such as "我的电话是
多少？" even replaced the phone number it asked about (its "value" was 多少). A message that
also states something ("我搬到上海了，附近有什么好吃的？") keeps its statement part.

The message is cut into clauses (sentences, then commas, and spaces between Chinese
characters, as people type without punctuation); each clause is a question, a request or a
statement. A standing instruction ("以后请用中文回答", "please never suggest meat") is a
statement about the user: it is remembered.

Chinese question words double as indefinites ("我什么都吃" = "I eat anything", "前几天",
"多少有点"), and a question can sit inside a statement ("我不知道他住在哪里"): those are read as
statements.
"""
from __future__ import annotations

import re
from functools import lru_cache

from memory_core.text.chunking import split_sentences

_I = re.IGNORECASE
_CJK = "\u3400-\u4dbf\u4e00-\u9fff"

# ---- Chinese ---------------------------------------------------------------------------------
_ZH_FINAL_PARTICLE = re.compile(r"(?:吗|么|嘛|呢|没有|不)\s*[?？!！。.~～…]*\s*$")
# ("不对不对", "不行不行": a 不 doubled, no A-not-A)
_ZH_A_NOT_A = re.compile(rf"(?<![不没])([{_CJK}])[不没]\1|有没有|是否|可否|能否|要不要|可不可以")
# "A 还是 B" asks which: 是 / 先 / 算 / 能 / 该 right before a short first choice ("我牙医是男的还是
# 女的来着", "年化2.8算高还是低", "我是单身还是有对象了"; not the 是 of 但是 / 可是 / 只是: "但是对花生
# 还是过敏" is "still allergic"), the same verb opening both choices ("先放
# 蛋还是先放番茄", "去爬山还是去看电影"), or "A 还是不 A" ("能洗澡还是不能"). 还是 after a noun or a
# phrase is "still" ("我吃的药还是二甲双胍", "房租还是每月三千", "目前工作还是程序员"), and after a
# subject, "after all" ("我还是喜欢吃辣", "想来想去还是辞职了"): a statement.
_ZH_EITHER_OR = re.compile(
    r"(?:(?<![但可只要还于就总倒老])是|先|算|能|该)[^，,。.!！?？\s的]{1,6}的?还是(?!觉得|想|会|得|要|在|很|挺|没|不|那|这|算了|一样|老|原来|以前|之前|"
    r"喜欢|习惯|每|按)[^，,。.!！?？\s]{1,12}|"
    r"(去|用|买|学|吃|喝|选|报|坐|住|穿|放)[^，,。.!！?？\s]{1,8}还是\1|"
    r"[^，,。.!！?？\s]{1,8}还是不(?:能|行|会|是|要|用|可以|去|对|好)\s*$|"
    # ... or the choice asked to be judged: "机油用全合成还是半合成好"
    r"[^，,。.!！?？\s]{0,7}[^，,。.!！?？\s我你他她它们在年来终后天还了得]还是(?!觉得|想|会|要|很|挺|没|不)"
    r"[^，,。.!！?？\s]{1,10}(?:好|呢|来着|合适|划算)\s*[?？]?\s*$")
# Question words. Indefinite and embedded uses are removed before this is applied.
_ZH_WH = re.compile(r"什么|什麼|啥|哪|几|幾|多少|谁|誰|怎么|怎麼|怎样|咋|为什么|為什麼|为啥|何时|何地|多久|多长时间|"
                    r"多大|多高|多远|多重|多贵|多少钱")
# "有几" is "a few" ("有几个朋友来了"), but asked of someone else, or of a household, and ending
# there, it asks how many: "你家有几口人", "你有几个孩子", "我家有几口人".
_ZH_HOW_MANY = re.compile(r"有几口人(?:来着)?[啊呀呢嘛]?$|^(?:你|您|你们)[^，,。.!！?？\s]{0,6}有几(?:个|口|只|条|套|辆|台|本|家|位|岁)"
                          r"[^，,。.!！?？\s]{0,4}[啊呀呢嘛]?$|"
                          # ... and asked of a thing, ending on what is counted: "蜘蛛有几条腿", "这个月有几天"
                          r"^(?!我)[^，,。.!！?？\s]{1,6}有几(?:个|只|条|种|天|次|年|月|周|本|位|颗|根|层|站)"
                          r"[\u4e00-\u9fff]{0,2}[啊呀呢嘛]?$")
_ZH_INDEFINITE = re.compile(
    r"(?:什么|啥|哪儿|哪里|哪|谁|怎么|几)(?:[^，,。.!！?？\s]{0,3}?)(?:都|也)|"  # 什么都吃, 谁也不, 哪儿都行
    r"没(?:有)?什么|不怎么|什么的|哪怕|几乎|多少(?:有点|有些|还|会|也|都)|"
    r"(?:前|这|那|好|十|最近|一|了|和|跟|与|有|近|头|后|才|就|只)几(?!岁|点|号|月份|年级)|过几(?=天|年|个月|周|分钟|小时|次)|"
    r"几(?:十|百|千|万)|"
    r"(?:说|讲|聊|提|唠|交代)几(?=件|个|句)|"  # "跟你说几件事": a few things to tell, not how many
    r"(?:不知道|不清楚|不记得|忘了|想不起来?|搞不清|说不清|不确定|不管|无论|随便)[^，,。.!！?？]*"
)
# "给我/帮我/替我 + a verb ... 了" is what someone did for the user ("给我换成缬沙坦了", "帮我把车修好了"),
# not what the user asks: a request is not yet done. (Not 好了 / 算了 / 就行了, which soften a request.)
_ZH_DONE_FOR_ME = re.compile(r"^(?:给我|帮我|替我)(?!把)[^，,。.!！?？]*(?:(?<![好算行得够])了|(?<!一下)(?<!就)(?<!那)好了)"
                             r"[啊呀哦噢～~！!。.]*$")
_ZH_RECALL_QUESTION = re.compile(r"^(?:你)?(?:还)?记(?:不记)?得(?:吗|我|你|上次|之前|以前)|^你(?:还)?记得|^还记得")
_ZH_REQUEST = re.compile(
    r"^(?:请问|问一下|问问|想问|我想问|我想知道|想知道|我想了解|请教|"
    r"(?:请|麻烦|拜托)?(?:你)?(?:帮我|帮忙|给我|替我)|"
    r"(?:你)?(?:能不能|能否|可不可以|可以|能|会不会)(?:帮|给|告诉|推荐|说|讲|查|算|介绍|提醒|写|翻译|找)|"
    r"(?:请|麻烦你?)?(?:推荐|告诉我|提醒我|提醒一?下(?=我)|说说|讲讲|讲个|说个|来个|来一个|查一下|查查|算一下|算算|翻译|介绍一下|"
    # "说下我公司名字": the user's fact asked for by name (not "说一下 我明天请假", which tells)
    r"(?:说|讲)一?下(?=[^，,。.!！?？\s]{0,8}(?:名字|号码|地址|生日|电话|密码|型号|尺码|车牌|账号)\s*$)|"
    r"看看|看一下|列一下|列出|写一|帮忙))"
)

# ---- English ---------------------------------------------------------------------------------
_EN_WH_QUESTION = re.compile(
    r"^(?:so|and|but|ok|okay|hey|hi|well|um|oh)?[,\s]*"
    r"(?:(?:what|where|when|who|whom|whose|which|why|how)(?:'s|'re|'d|'ll|s)\b|"
    r"(?:what|where|when|who|whom|whose|which|why|how)(?:\s+(?!i\b|we\b|my\b|our\b)[a-z]+){0,3}?\s+"
    r"(?:is|are|was|were|do|does|did|can|could|should|would|will|have|has|had|am|shall|may|might)\b|"
    r"how (?:many|much|long|old|often|far|come)\b|(?:what|how) about\b)", _I)
# What cannot open the subject of an inverted question ("have for years", "has been a while", "did so
# twice"): after an opening auxiliary it means a statement with its subject dropped. Not a bare "too",
# "about", "at", "still": "Is too much protein bad", "Is about 6 hours enough", "Is still open on
# sundays the pharmacy" ask (found in review).
_NO_INVERTED_SUBJECT = (r"(?:been|done|gone|had|got|gotten)\b|(?:for|since)\s+(?:years|ages|months|weeks|decades|a while|"
                        r"a long time|a year|a month|\d+|forever)\b|so\s+(?:twice|once|too|again|already|before)\b")
_EN_AUX_QUESTION = re.compile(
    r"^(?:so|and|but|ok|okay|hey|hi|well|um|oh)?[,\s]*"
    r"(?:(?:do|does|did|can|could|would|will|is|are|am|was|were|have|has|had|should|shall|may|might|"
    r"doesn't|didn't|can't|won't|isn't|aren't|wasn't|haven't|hasn't)\s+"
    r"(?:i|you|we|my|your|it|he|she|they|there|the|a|an|this|that|these|those|anyone|anybody|any|u)\b|"
    # "is drop off before 8:30", "does the pharmacy open on Sundays": an opening auxiliary asks. An
    # auxiliary followed by a preposition, a participle or an adverb of time has no subject to invert:
    # its "I" was dropped ("I smoke a pack a day, have for years", "have been vegan since 2019").
    r"(?:is|are|does|do|did|was|were|has|have|can|will)\s+(?!not\b|never\b|" + _NO_INVERTED_SUBJECT + r")[a-z]+\b)",
    _I)
# Without a question mark, "had" or "was" / "were" with no subject after it opens a statement whose
# "I" was dropped, as people type: "had my follow-up with Dr Hale, she bumped the dose", "had a great
# time at the beach", "was at the gym till 9". An inverted question names its subject next ("had you
# heard", "was the flight late", "were they home").
_EN_SUBJECT_DROPPED = re.compile(
    r"^(?:so|and|but|ok|okay|hey|hi|well|um|oh)?[,\s]*(?:"
    r"had\s+(?!(?:i|you|we|it|he|she|they|there|u|anyone|anybody|not|never)\b)|"  # "had my checkup": an object
    r"(?:was|were)\s+(?!(?:i|you|we|my|your|it|he|she|they|there|the|this|that|these|those|anyone|anybody|any|u|"
    r"his|her|our|their|its|not|never)\b))[a-z]+\b(?!.*[?？]\s*$)", _I)
_EN_REQUEST = re.compile(
    r"^(?:(?:so|and|ok|okay|hey|hi|well|um|oh)[,\s]+)*"
    r"(?:please\b|pls\b|tell me|remind me|recommend|suggest|give me|show me|help me|find me|find\b|list\b|"
    r"explain|describe|write me|draft|translate|calculate|compute|book me|order me|let me know|"
    r"i(?: want| would like|'d like| need) to know|i(?:'m| am)? wonder(?:ing)?|i was wondering|any (?:ideas|suggestions|"
    r"tips|recommendations|advice)|got any|what about|how about|quick question|question:|"
    r"(?:can|could|would|will) you\b|do you (?:know|remember|recall)\b|remember when\b)", _I)
# A sentence that opens with a task verb asks for something ("Write a limerick about a cat",
# "Translate this", "Give me a recipe"), however it ends.
_EN_IMPERATIVE = re.compile(
    r"^(?:(?:please|pls|ok|okay|hey|so|now|quick(?:ly)?)[,\s]+)*"
    r"(?:write|draft|translate|summari[sz]e|explain|describe|give|make|create|generate|compose|list|find|show|"
    r"help|calculate|compute|convert|check|look up|search|book|order|set|schedule|send|fix|debug|rewrite|"
    r"proofread|edit|name|pick|choose|plan|compare|define|teach|quiz|brainstorm|outline|recommend|suggest|"
    r"tell|remind|read)\b(?! me\b (?:know|be)\b)", _I)
# 改 and 算 open a request ("改一下这段", "算一下"), not a change or a verdict ("改去成都了", "算了").
# "查" asks to look something up; "查出来痛风了", "查了一下是..." tell what was found.
_ZH_IMPERATIVE = re.compile(r"^(?:请|麻烦|帮忙)?(?:写|翻译|总结|解释|生成|列|列出|起个|起一个|算(?![了是])|查(?!出|到了|了|过|完)|讲|说说|推荐|"
                            r"改(?![去到成为签期天了])|润色|"
                            r"出个|出一个|想个|想一个|想几个|编|做个|做一个|画|教我|教教我|给我讲|帮我|"
                            # "把我家wifi密码发我一下": hand something over to me, an order
                            r"你?把[^，,。！!？?\s]{1,15}?(?:发|给|告诉|拿|递|传|转|念)(?:给|一下)?我(?=$|一下|吧|呗|看|[\s，,。！!？?]))")

# Reactions and acknowledgements that say nothing about the user ("haha thanks, that's wild").
_ACK_WORDS = re.compile(
    r"\b(?:lol|lmao|rofl|haha+|hehe+|omg|wow|whoa|cool|nice|great|awesome|thanks|thank you|thx|ty|ok|okay|k|"
    r"sure|yes|yeah|yep|no|nope|got it|sounds good|makes sense|that'?s (?:so |really |too |pretty )?(?:wild|crazy|funny|"
    r"great|cool|nice|awesome|fair|true|it|hilarious|amazing|insane|brilliant|cute|sweet|adorable|mad)|"
    r"(?:so |too )?(?:funny|hilarious)|no worries|np|cheers|bye|good night|good morning|hi|hello|hey|worked|it worked|perfect|"
    r"interesting|fair enough|right|true|exactly|agreed|totally|ha)\b|"
    r"哈+|呵+|嘿+|谢谢|多谢|感谢|好的|好吧|嗯+|哦+|噢+|收到|明白|知道了|没事|不客气|厉害|牛|赞|有道理|对对|是的|好滴|好哒|行|可以|"
    r"晚安|早安|拜拜|再见|你好|嗨|666|绝了|笑死|太好了|不错", _I)
# Greetings and sign-offs: small talk only when nothing else is said ("新年快乐呀", "hey how's it
# going"); "新年快乐！升职了" and "merry christmas, laid off" tell news.
_GREETINGS = re.compile(
    r"\b(?:that'?s (?:all|it) (?:for (?:now|today|tonight))?|talk (?:to you )?(?:later|soon|tomorrow)|"
    r"see (?:you|ya)(?: later)?|catch you later|have a (?:good|nice|great) (?:one|day|night|evening|weekend)|"
    r"happy new year|merry christmas|happy holidays|"
    r"happy (?:mon|tues|wednes|thurs|fri|satur|sun)day|happy (?:weekend|easter|thanksgiving|halloween|diwali|eid|hanukkah)|"
    r"(?:have a )?(?:good|nice|great) weekend|how'?s it going|how are you (?:doing )?today|how are you(?: doing)?|"
    r"how have you been|"
    r"what'?s up|how'?s your day(?: going| been)?|good (?:morning|afternoon|evening|night)|"
    # the weather, said as a remark to anyone
    r"(?:it'?s )?(?:so |really |pretty )?(?:cold|hot|freezing|boiling|humid) (?:today|out(?:side)?|again)|"
    r"hello there)\b|"
    r"好嘞|懂了|了解|明白了|知道啦|(?:新年|春节|元旦|中秋|端午|节日|圣诞|国庆|周末|周五|五一|七夕)(?:快乐|愉快)|你好吗|最近好吗|在吗|在不在|"
    r"早上好|晚上好|下午好|今天也要(?:元气满满|加油|开心|开开心心|努力)|"
    r"(?:今天|外面|最近)?(?:好|真|太)(?:冷|热|闷)|(?:冷|热)死了|(?:冻|热)成狗", _I)
_PARTICLES = re.compile(r"[啊呀啦吧哦嘛呢了的哈]")
# Reactions whose "me" says nothing about the user ("哈哈哈笑死我了", "lmao you're killing me").
_REACTION_ME = re.compile(r"(?:笑|乐)死(?:我|人)了?|you'?re killing me|made my day", _I)
_FIRST_PERSON = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|me|my|mine|we|we're|our|us)\b|我", _I)


@lru_cache(maxsize=4096)  # pure: the chat path asks it of each message more than once
def is_small_talk(text: str) -> bool:
    """A reaction or acknowledgement with nothing about the user in it: no first person, no
    number, and at most a couple of words besides the acknowledgement ("Worked, thanks!",
    "haha that's wild", "哈哈哈好的")."""
    body = _REACTION_ME.sub(" 笑死 ", (text or "").strip()).strip()
    if not body or _FIRST_PERSON.search(body) or re.search(r"\d", body):
        return not re.search(r"\w", body)
    if _GREETINGS.search(body):
        rest = _PARTICLES.sub(" ", _ACK_WORDS.sub(" ", _GREETINGS.sub(" ", body)))
        return not re.search(r"[A-Za-z\u4e00-\u9fff]", rest)
    rest = _ACK_WORDS.sub(" ", body)
    words = re.findall(r"[A-Za-z]+", rest) + re.findall(r"[\u4e00-\u9fff]{1,2}", rest)
    return bool(_ACK_WORDS.search(body)) and len(words) <= 2


_THANKS = re.compile(r"\bthanks?\b|\bthank you\b|\bthx\b|\bcheers\b|谢谢|谢啦|谢了|多谢|感谢", _I)
_ADVICE_OUTCOME = re.compile(
    r"\b(?:did it|did the trick|worked|works now|fixed it|that helped|it helped|helped a lot|i'?ll try|will try|"
    r"gonna try|going to try|try that)\b|搞定|管用|有用|好使|掉了|试试|解决了|成功了|好了", _I)
_POSSESSIVE = re.compile(r"\b(?:my|our|mine)\b|我的|我们的|我家", _I)
_NEWS = re.compile(r"\b(?:new|moved|started|joined|got married|engaged|pregnant)\b|新|搬|换|入职|结婚|怀孕", _I)


@lru_cache(maxsize=4096)
def closes_advice(text: str) -> bool:
    """Thanks for help, with how it went ("WD-40 did it, thanks", "thanks, I'll try the
    no-screens thing", "用洗洁精搓掉了 谢啦"): the end of an exchange, nothing about the user
    that lasts. Short, and nothing of the user's own or new in it ("Thanks, my new number is ...",
    "Thanks, the new job works out")."""
    body = (text or "").strip()
    words = len(re.findall(r"[A-Za-z0-9'\-]+", body)) + len(re.findall(r"[\u4e00-\u9fff]", body)) / 2
    return (words <= 12 and _THANKS.search(body) is not None and _ADVICE_OUTCOME.search(body) is not None
            and _POSSESSIVE.search(body) is None and _NEWS.search(body) is None and _INSTRUCTION.search(body) is None)


_GENERAL_REQUEST = re.compile(
    r"^\W*(?:(?:can|could|would|will) you\s+|please\s+|hey\s+)*(?:tell (?:me )?(?:a|another|one more) (?:joke|story|riddle|fun fact)|"
    r"write (?:me )?(?:a|an|another) (?:haiku|poem|limerick|story|song|sonnet|riddle)|explain\b|translate\b|define\b|"
    r"what(?:'s| is) the (?:capital|population|meaning|definition) of\b|"
    # a question about the world, asked of anyone: "why is the sky blue?", "what's the difference
    # between a crocodile and an alligator", "how far is the moon", "一光年到底有多远啊"
    r"(?:so\s+)?why (?:is|are|do|does|did) (?!i\b|my\b|we\b|our\b)|what'?s the (?:actual |real )?difference between\b|"
    r"how (?:far|big|old|tall|deep|hot|cold|long|heavy) (?:is|are|was|were) (?:a|an|the)\b|"
    r"how (?:does|do) (?:a|an|the)?\s*(?:[a-z]+\s+){0,2}[a-z]+ work\b|who (?:invented|discovered|wrote|painted|built)\b|"
    # "what are the most common chronic diseases in the world?"
    r"(?:what|which) (?:are|is) the (?:most|least) (?:common|popular|famous|dangerous|deadly|widespread)\b)|"

    r"^\W*(?:请|麻烦)?(?:你)?(?:给我|跟我|帮我)?(?:讲|说)(?:个|一个|几个)(?:笑话|故事|冷笑话)|^\W*(?:请|帮我)?写(?:一首|首|一篇|个)|"
    r"^\W*(?:请|帮我)?(?:翻译|解释一下)", re.IGNORECASE)
# The same in Chinese, where a question about the user often drops its 我 too: only with no 我 at all.
_WORLD_QUESTION_ZH = re.compile(r"什么是|是什么意思|有什么区别|的区别是|是什么原理|(?:到底)?有多(?:远|大|高|深|重|老)(?:啊|呀|呢)?\s*[?？]?$|"
                                r"^\W*(?:世界上|全世界|全球|中国)[^，,。]{0,12}(?:最|哪)|最常见的[^，,。]{0,10}(?:有哪些|是什么|是啥)")
_MINE = re.compile(r"\b(?:i|i'm|i've|i'd|i'll|my|mine|we|we're|our|us|myself)\b|\bfor me\b|我的|我们|我家|适合我|\b(?:about|for) me\b",
                   re.IGNORECASE)


_REQUEST_ME = re.compile(r"\b(?:tell|give|show|teach|write) me\b|\blike (?:i'?m|i am) (?:five|5|a kid|a child)\b|给我|跟我|帮我",
                         re.IGNORECASE)


@lru_cache(maxsize=4096)
def general_request(text: str) -> bool:
    """A request for general content with nothing of the user in it ("tell me a joke", "Can you
    explain what a black hole is, simply?", 给我讲个笑话, 写一首关于春天的小诗): the answer is
    the same for anyone, so no memory is brought in (a job title had ranked above the threshold
    for "tell me a joke"). "Write a poem about my dog" or "explain my blood test" are the user's."""
    body = (text or "").strip()
    if _WORLD_QUESTION_ZH.search(body) and "我" not in body:
        return True
    return _GENERAL_REQUEST.search(body) is not None and _MINE.search(_REQUEST_ME.sub(" ", body)) is None


_EN_INDIRECT = re.compile(r"\b(?:i (?:don't|do not|didn't|can't|cannot) (?:know|remember|recall)|no idea|not sure)\b", _I)

# Standing instructions: statements about how the user wants to be treated, worth remembering.
_INSTRUCTION = re.compile(
    r"以后|今后|从现在起|每次|总是|始终|一律|永远|千万别|千万不要|不要再|别再|记住|记得(?!我)|"
    r"(?:用|使用)(?:中文|英文|英语|简体|繁体)|(?:叫|称呼)我|回答(?:时|的时候)?(?:请|要)?(?:简短|简洁|详细)|"
    r"\b(?:from now on|going forward|in (?:the )?future|always|never|every time|whenever|don'?t ever|"
    r"do not ever|call me|remember (?:that|:)|keep in mind|don'?t forget (?:that )?i)\b", _I)

QUESTION_END = re.compile(r"[?？]\s*$")
_SECOND_PERSON = (
    (re.compile(r"\byou(?:'re| are)\b", re.IGNORECASE), "I am"),
    (re.compile(r"\byour(?:s)?\b", re.IGNORECASE), "my"),
    (re.compile(r"\byou\b", re.IGNORECASE), "I"),
    (re.compile(r"你们|您|你"), "我"),
)


def as_asked_of_me(question: str) -> str:
    """The question in the user's own words ("Where do you live?" -> "Where do I live?"), so the
    rules written for what users say about themselves can read what the assistant asked them."""
    for pattern, replacement in _SECOND_PERSON:
        question = pattern.sub(replacement, question)
    return question


# A Chinese question often ends in its final particle with no mark ("你有宠物吗").
_ZH_PARTICLE_END = re.compile(r"[吗呢嘛][。.!！~～]*\s*$")


def asks_anything(text: str) -> bool:
    """Whether any sentence of ``text`` is a question ("Do you have pets? Call me later." asks;
    so does "你有宠物吗"): unlike ``asked_question``, the question need not come last."""
    return any(QUESTION_END.search(s) or _ZH_PARTICLE_END.search(s) for s in split_sentences(text))


def asked_question(context: str) -> str:
    """The question that ``context`` ends with ("Cool! What's your favourite pizza?" -> its last
    sentence), or "" when it ends with none: only a question makes a reply's few words a fact."""
    text = context.strip()
    if not text or not QUESTION_END.search(text):
        return ""
    sentences = split_sentences(text)
    return sentences[-1].strip() if sentences else text



# What the user is doing as they ask, said beside a question: not worth keeping.
_TRANSIENT = re.compile(
    r"\bI(?:'m| am) (?:standing|sitting|waiting|here|outside|at the|in the|on my way|about to|blanking|stuck|"
    r"looking at|filling|trying to|in a hurry|late)\b|\bI need (?:it|this|that|to)\b|\bI (?:forgot|can'?t remember)\b|"
    r"我(?:正)?在(?:门口|外面|车里|路上|楼下|填)|我忘了|想不起来|急用|着急|马上要", _I)

_CLAUSE_SPLIT = re.compile(rf"(?<=[，,；;：:])\s*|(?<=[{_CJK}])\s+(?=[{_CJK}])")
_CJK_CHAR = re.compile(f"[{_CJK}]")
_LATIN_WORD = re.compile(r"[A-Za-z]+")


def _is_zh(text: str) -> bool:
    return _CJK_CHAR.search(text) is not None and len(_CJK_CHAR.findall(text)) >= len(_LATIN_WORD.findall(text))


def _zh_kind(clause: str) -> str:
    body = clause.strip()
    if _ZH_RECALL_QUESTION.search(body):
        return "question"
    if _ZH_DONE_FOR_ME.search(body):
        return "statement"  # "(医生)给我换成缬沙坦了": what someone did for the user, told
    if _ZH_IMPERATIVE.search(body) and not _INSTRUCTION.search(body):
        return "request"
    if _ZH_REQUEST.search(body):
        return "statement" if _INSTRUCTION.search(body) and not re.search(r"推荐|告诉我|查|算", body) else "request"
    if re.search(r"[?？]\s*$", body) or _ZH_FINAL_PARTICLE.search(body):
        return "question"
    if _ZH_HOW_MANY.search(body):
        return "question"
    plain = _ZH_INDEFINITE.sub(" ", body)
    if _ZH_A_NOT_A.search(plain) or _ZH_WH.search(plain) or _ZH_EITHER_OR.search(plain):
        return "question"
    return "statement"


# A question typed without its mark that opens on "why": "why every deadline on a friday lol" (no
# statement opens on it; "who" does, in a clause cut after a comma: "my sister, who lives in Leeds").
_EN_WHY = re.compile(r"^(?:so|and|but|ok|okay|hey|hi|well|um|oh|honestly)?[,\s]*why\s+[a-z]+", _I)
# A supposition asked or weighed with "would" / "could" / "might": "if I moved to Cork would rent be any
# cheaper", "if I got the promotion to 70k how much would I take home". A supposed world, not a fact
# (an "if ... will" habit or plan, "if the kids are sick I'll work from home", stays a statement).
_EN_SUPPOSED = re.compile(r"^\W*(?:so|and|but|ok|okay|well|hmm)?[,\s]*(?:if|what if|suppose|supposing)\b.*\b(?:would|could|might)\b", _I)


def _en_kind(clause: str) -> str:
    body = clause.strip().strip("\"'“”‘’")
    if re.search(r"[?？]\s*$", body):
        return "question"
    if _EN_WHY.search(body) or (_EN_SUPPOSED.search(body) and not _HEDGE.search(body)):
        return "question"
    if _EN_INDIRECT.search(body):
        return "statement"
    if _EN_WH_QUESTION.search(body) or (_EN_AUX_QUESTION.search(body) and not _EN_SUBJECT_DROPPED.search(body)):
        return "question"
    if _EN_REQUEST.search(body) or _EN_IMPERATIVE.search(body):
        standing = re.search(r"\b(?:never|always|from now on|going forward|in (?:the )?future|don'?t ever|do not ever|"
                             r"call me|every time|whenever|remember (?:that )?(?:i|my|we|our)|keep in mind|note that|"
                             r"don'?t forget (?:that )?(?:i|my|we|our))\b", body, _I)
        return "statement" if standing else "request"
    return "statement"


@lru_cache(maxsize=16384)  # pure; the write rules ask it of the same clauses many times
def clause_kind(clause: str) -> str:
    """"question", "request" or "statement" for one clause (Chinese or English)."""
    return _zh_kind(clause) if _is_zh(clause) else _en_kind(clause)


def _clauses(sentence: str) -> list[str]:
    parts = [p for p in _CLAUSE_SPLIT.split(sentence) if p and p.strip()]
    return parts or [sentence]


def _is_fragment(clause: str) -> bool:
    """A lead-in that belongs to the question after it ("When I was in Paris, what did I eat?",
    "上次去北京的时候，我住在哪个酒店？"), or a bare interjection: not a statement of its own."""
    body = clause.strip(" ，,；;：:")
    return bool(re.match(r"^(?:when|if|since|because|as|while|after|before|during|about|regarding|by the way|btw|"
                         r"hey|hi|hello|oh|ok|okay|so|well|um|hmm|sorry|also|and|but)\b", body, _I)
                or re.search(r"(?:的时候|时|以后|之后|之前|以前|的话|如果|要是|关于|对了|顺便问一下|那个|嗯|哦|诶|哎)$", body)
                or re.match(r"^(?:如果|要是|关于|对了|当|顺便)", body)
                or len(re.sub(r"\W", "", body)) <= 1)


# Asked to keep what follows: a request whose object is the statement after it.
_ASKED_TO_KEEP_EN = re.compile(r"^\W*(?:can|could|would|will) you (?:please )?(?:remember|note|save|keep in mind|"
                               r"make a note)(?: (?:that|this|for me))?[:,]?\s+(?=(?:i|i'm|my|our|we|me)\b)", _I)
_TELL_ME = re.compile(r"^(?:说|讲)一?下")  # "说下我公司名字": followed by the answer, a frame
_ASKED_TO_KEEP_ZH = re.compile(r"(?:请|麻烦)?你?(?:帮我|给我|替我)?(?:记一下|记住|记着|记下来?|存一下|存着|备个忘|备忘一下)"
                               r"(?:吧|哈|啊|呀)?[：:]?")


# A sentence that opens with a condition and ends asking is one question about a what-if: the
# clauses between ("每天坐高铁来北京上班") are part of what is supposed, not facts.
_WHAT_IF_OPENING = re.compile(r"^\W*(?:要是|如果|假如|假设|万一|倘若|\bif\b|\bwhat if\b|\bsuppose\b|\bsupposing\b)", _I)
# ... but a hedge about the conversation opens a real fact: "If it matters, I'm allergic to shellfish",
# "If I remember right, my flight is at 9", "如果没记错，我是O型血", "如果方便的话，我下周要去北京出差".
_HEDGE = re.compile(r"matters?|helps?|need(?:s|ed)? to know|remember|recall|mistaken|wondering|(?:didn'?t|don'?t) know|"
                    r"honest|possible|useful|changes anything|care|ask|interested|curious|relevant|"
                    r"的话|方便|有用|记得|记错|介意|问|实话|需要|想知道|有关系|有帮助", _I)


@lru_cache(maxsize=8192)  # pure; the importance, constraint and conflict rules all ask it of one text
def statement_part(text: str) -> str:
    """``text`` without its questions and requests ("" when nothing else is left).

    Sentences are kept whole when they hold no question; a sentence that mixes a statement and
    a question ("I just moved to Boston, where should I eat?") keeps its statement clauses, minus
    lead-ins that only frame the question."""
    stripped = (text or "").strip()
    if not stripped:
        return ""
    kept: list[str] = []
    for sentence in split_sentences(stripped):
        clauses = _clauses(sentence)
        kinds = [clause_kind(c) for c in clauses]
        asked_to_keep = _ASKED_TO_KEEP_EN.match(sentence) if len(clauses) == 1 else None
        if asked_to_keep:
            # "can you remember that my locker code is 114": what follows is what to keep
            rest = sentence[asked_to_keep.end():]
            clauses, kinds = [rest], [clause_kind(rest)]
        # "帮我记一下 家里wifi密码是...", "说一下我女儿的名字 叫朵朵" frame what follows: said with it, not
        # a request. Alone, or before questions only ("帮我记一下 车停哪了"), they ask.
        frames = [bool(_ASKED_TO_KEEP_ZH.fullmatch(c.strip()) or (k == "request" and _TELL_ME.match(c.strip())))
                  for c, k in zip(clauses, kinds)]
        told = any(k == "statement" and not frame for k, frame in zip(kinds, frames))
        if any(frames) and not told:
            continue  # nothing to keep in it
        kinds = ["statement" if frame else k for frame, k in zip(frames, kinds)]
        if all(k == "statement" for k in kinds):
            kept.append(sentence)
            continue
        if kinds[-1] != "statement" and _WHAT_IF_OPENING.match(clauses[0]) and not _HEDGE.search(clauses[0]):
            continue  # "要是搬去天津住 每天坐高铁来北京上班 现实吗": every clause is the what-if asked about
        pieces: list[str] = []
        for index, (clause, kind) in enumerate(zip(clauses, kinds)):
            if kind != "statement" or not re.search(r"\w", clause):
                continue
            if _is_fragment(clause) and any(k != "statement" for k in kinds[index + 1:]):
                continue  # a lead-in that frames the question after it
            if any(k != "statement" for k in kinds[:index]):
                continue  # said after the question, in its sentence: it explains the request
            if _TRANSIENT.search(clause):
                continue  # "I'm standing at the gate": the moment of asking, not a fact
            pieces.append(clause.strip())
        if pieces:
            kept.append(_join_clauses(pieces))
    return _join_sentences(kept)


def _join_clauses(pieces: list[str]) -> str:
    out = ""
    for piece in pieces:
        if out and not re.search(r"[，,；;。.!！]$", out):
            out += "，" if re.search(f"[{_CJK}]$", out) else ","
        out += ("" if not out or re.match(f"[{_CJK}]", piece) or re.search(f"[{_CJK}，]$", out) else " ") + piece
    return re.sub(r"[，,；;：:]\s*$", "", out).strip()


def _join_sentences(sentences: list[str]) -> str:
    out = ""
    for sentence in sentences:
        if out and not re.search(f"[{_CJK}]$", out) and not re.match(f"[{_CJK}]", sentence):
            out += " "
        out += sentence
    return out.strip()


def is_question_or_request(text: str) -> bool:
    """True when ``text`` asks for something and states nothing about the user."""
    return statement_part(text) == ""


def mixes_a_question(text: str) -> bool:
    """True when ``text`` holds a question or a request beside what it states ("I have chicken
    and rice, what can I cook?"): its statement part may be only the reason for asking."""
    return any(clause_kind(c) != "statement" for s in split_sentences((text or "").strip()) for c in _clauses(s))


def is_question(text: str) -> bool:
    """True when the whole of ``text`` is a question or a request (the conflict rules use it:
    a question never states a new value, whatever slot words it contains)."""
    return is_question_or_request(text)
