"""Offline importance (1-5) and memory type by rules, in Chinese and English (see the package docstring)."""
from __future__ import annotations

import re
from datetime import datetime
from functools import lru_cache

from memory_core.text.chunking import split_sentences
from memory_core.text.intent import QUESTION_END as _QUESTION_END  # noqa: F401 - the offline rules share it
from memory_core.text.intent import as_asked_of_me, asked_question  # noqa: F401 - re-exported
from memory_core.text.keywords import keyword_tokens
from memory_core.text.pii import PLACEHOLDER_RE
from memory_core.text.timeparse import parse_time_range
from memory_core.types import MemoryType

_I = re.IGNORECASE

# ---------------------------------------------------------------- importance rules

_SAFETY_RE = re.compile(
    r"过敏|哮喘|糖尿病|高血压|低血糖|心脏病|癫痫|抑郁症|癌症|胰岛素|青霉素|药物|吃药|服药|用药|处方|急救|肾上腺素|"
    r"怀孕|孕期|休克|乳糖不耐|紧急联系人|透析|心脏支架|"
    r"allerg|asthma|diabet|epi-?pen|anaphyla|epilep|insulin|penicillin|medication|prescri|blood pressure|"
    r"heart condition|seizure|pregnan|inhaler|celiac|coeliac|lactose intoleran|emergency contact|dialysis|"
    r"降压药|药片|停药|\bmetformin\b|\bstatins?\b|\bmeds\b|\bmedicines?\b|\b\d+ ?mg\b",
    _I,
)
# Where one is based, or stays for years of study or work ("I'm in Berlin for my master's",
# "我在柏林读研"), not for a weekend: a home like "I live in ..." (the slot reads its value after).
# Chinese names the adult stays only: with 读书 / 上学 too, MADial zh's school memories ("在农村
# 上学的时候...") were rated as homes and recall@5 fell .490 -> .489 (validate .518 -> .516).
# A place's capital letter is read case-sensitively even in these case-blind patterns; a job
# interview, a fair or "for work" is a visit ("I'm in London for the job fair" is no home).
STAY_EN = (r"\bI(?:'m| am) (?:now |currently )?based in\b|\bI(?:'m| am) (?:now |currently )?in "
           r"(?=(?-i:[A-Z])[\w\-' ]{0,30}?,? (?:for|doing) (?:my|a|the|an) "
           r"(?:master'?s|ph\.?d|degree|studies|doctorate|internship|residency|postdoc|"
           r"exchange (?:year|semester|program(?:me)?))\b)")
STAY_ZH_PLACE = r"在(?P<stay>[^，。,.!?！？\s在]{1,10}?)(?:读研|读博|留学|读大学|念大学|读硕士|读博士)"
_ADDRESS_RE = re.compile(
    r"住在|住址|地址|搬到|搬家|家在|\blive[sd]? in\b|\bliving in\b|\bmoved to\b|\baddress\b|\bhome is in\b|"
    r"\bmy (?:new )?(?:flat|apartment|place|house) in (?-i:[A-Z])|"
    + STAY_EN + "|" + STAY_ZH_PLACE, _I)
# The user's standing arrangements, plainly said: the home they rent or own, the car they drive,
# who their dentist, doctor, boss or landlord is. Rated as remarks (2, gone in 180 days), a move
# or a new dentist a year later found nothing to replace, and both stayed "current".
_ARRANGEMENT_RE = re.compile(
    r"\b(?:I|we) (?:rent|own|share|bought|have) (?:a|an|the|our) (?:[\w-]+ ){0,3}(?:flat|apartment|house|condo|"
    r"bungalow|studio|townhouse|terrace)\b|\b(?:I|we) drive an? \b|\bmy (?:car|ride) is\b|"
    r"\bmy (?:\w+ )?(?:dentist|doctor|gp|physician|therapist|boss|manager|supervisor|landlord|landlady)(?:'s name)? "
    r"(?:is|'s)\b|"
    # a loan runs for years: "每个月还房贷六千多", "our mortgage is 1800 a month"
    r"(?:我|我们|我家)的?[^，。,.]{0,4}(?:房贷|车贷|按揭)|还(?:房贷|车贷)|(?:房贷|车贷)(?:还(?:剩|有|欠)|每个?月)|"
    r"\b(?:my|our) (?:\w+ )?(?:mortgage|car loan|student loans?)\b|"
    r"租的房子|租房|合租|我开的是|我的车是|我的(?:\w{0,4})(?:牙医|医生|领导|上司|老板|主管|房东)(?:是|叫)|"
    r"(?:一直|都|常)在[^，。,.!?！？\s]{1,10}医院[^，。,.!?！？\s]{0,6}看|\bmy (?:\w+ )?(?:clinic|hospital) is\b",
    _I)
_CONTACT_RE = re.compile(
    PLACEHOLDER_RE.pattern + r"|电话|手机号|手机号码|号码|邮箱|微信号|\bphone\b|\be-?mail\b|\bmobile number\b|"
    r"'s number\b|\bmy number\b", _I)
_BIRTHDAY_RE = re.compile(r"生日|出生|\bbirthday\b|\bb-?days?\b|\bborn (?:on|in)\b", _I)
_FAMILY_RE = re.compile(
    r"妈妈|母亲|爸爸|父亲|老婆|妻子|老公|丈夫|女儿|儿子|孩子|哥哥|姐姐|弟弟|妹妹|爷爷|奶奶|外公|外婆|家人|全家|一家人|女朋友|男朋友|"
    r"父母|爸妈|祖父|祖母|孙子|孙女|外孙|[表堂](?:哥|姐|弟|妹)|姑姑|姑妈|姨妈|舅舅|舅妈|岳父|岳母|公公|婆婆|"
    r"(?:我|老)(?:爸|妈)|我(?:哥|姐|弟|妹|爷|奶|姥|闺女)|"  # kin said colloquially: 我爸是退休的中学老师
    r"单身|结婚|离婚|对象|\bmarried\b|\b(?:I'm|I am|still|am) single\b|\bdivorced?\b|\bwidowed\b|"
    r"\b(?:wife|husband|son|daughter|mother|father|mom|mum|dad|kids?|children|sister|brother|grandma|grandpa|"
    r"grandmother|grandfather|grandparents?|parents|grand(?:kids|children|son|daughter)s?|cousins?|aunts?|uncles?|"
    r"nieces?|nephews?|in-laws|girlfriend|boyfriend|fianc[ée]e?|partner|family)\b",
    _I,
)
_JOB_RE = re.compile(
    r"在[^，。,.!?！？\s]{1,12}(?:工作|上班|实习)|就职|任职|入职|跳槽|职业|月薪|年薪|工资|薪水|\bsalary\b|"
    r"在[^，。,.!?！？\s]{1,8}做(?:产品|运营|设计|开发|销售|财务|会计|老师|医生|护士|律师|工程师|程序员|客服|市场|人事|行政)|我是(?:一名|一个)?[^，。]{0,6}"
    r"(?:工程师|医生|护士|老师|律师|设计师|经理|程序员|学生|会计|厨师)|"
    r"\bwork(?:s|ed|ing)? (?:at|for|as)\b|\bmy job\b|\bemployer\b|\bemployed\b|"
    # a new job told as news: "I've just started at Deloitte in Manchester"
    r"\bstarted (?:a new job |working |work |my new job )?(?:at|with) (?-i:[A-Z])|\b(?:new|first) job (?:at|with)\b|"
    r"\bI(?:'m| am) an? (?:\w+ )?(?:engineer|developer|doctor|nurse|teacher|student|lawyer|designer|manager|"
    r"programmer|scientist|accountant|writer|chef)\b",
    _I,
)
_FIRM_PREF_RE = re.compile(
    r"不吃|不喝|从不|从来不|绝不|绝对不|一定要|必须|讨厌|受不了|吃素|素食|戒了|不能吃|"
    r"\bnever\b|\balways\b|\bI hate\b|\bI prefer\b|\bcan'?t stand\b|\bI (?:don'?t|do not|can'?t|cannot) "
    r"(?:eat|drink|stand)\b|\bvegetarian\b|\bvegan\b|\bhalal\b|\bkosher\b|\bquit\b|\bgave up\b",
    _I,
)
_PLAN_RE = re.compile(
    r"计划|打算|准备|将要|要去|想去|下周|下个月|明天|明年|安排|约了|预约|"
    r"\bplan(?:s|ning|ned)?\b|\bgoing to\b|\bgonna\b|\bwill\b|\bnext (?:week|month|year)\b|\btomorrow\b|"
    r"\bschedule[d]?\b|\bappointment\b|\btrip\b",
    _I,
)
_HOBBY_RE = re.compile(
    r"喜欢|爱吃|爱喝|爱好|兴趣|热爱|最爱|迷上|常去|经常|"
    r"\blikes?\b|\bloved?\b|\bloves\b|\benjoy|\bhobby|\bhobbies\b|\bfavou?rite\b|\bfan of\b|\binto\b|\busually\b|\boften\b",
    _I,
)
# A dietary restriction stated in passing ("I can't have dairy") matters as much as "I don't eat
# pork": it is kept (4). Lasting self-disclosures (what the user is passionate about, has been
# doing for a while, has just taken up, keeps as pets, has worked with) live a year (3), like hobbies;
# without them such turns fell to 2 and expired after 180 days (LoCoMo: 95 gold turns, all 2).
_DIET_RE = re.compile(
    r"不能吃|不能喝|吃不了|喝不了|忌口|不耐受|"
    r"\bI (?:can'?t|cannot|can not) (?:have|eat|drink|tolerate)\b(?! been\b| to\b)|\bI(?:'m| am) (?:gluten|dairy|lactose)[- ]free\b",
    _I,
)
# A habit the user keeps: tobacco and drink are what a doctor or a form asks about and last for
# years (4, like a diet); a routine with a frequency ("I run every morning", "每周游泳三次", "3 coffees
# a day") lasts like a hobby (3). Both were rated 2, gone in 180 days while the smoker still smokes.
_SUBSTANCE_RE = re.compile(
    r"\bI (?:still |usually |only |don'?t |never |no longer )?(?:smoke|vape|chain-?smoke)\b(?! (?:my own |the |some |a )?"
    r"(?:brisket|salmon|meat|ribs|fish|cheese|sausages?|pork|turkey|chicken|bacon|ham)\b)|\bI(?:'m| am) a (?:heavy |light |social )?"
    r"(?:smoker|non-?smoker|drinker|non-?drinker)\b|\b(?:a|one|half a|two) packs? a day\b|"
    r"我(?:还|也|一直|平时)?(?:不)?(?:抽烟|吸烟|抽电子烟)|烟瘾|一天[一两半二三]包|老烟枪",
    _I,
)
_ROUTINE_RE = re.compile(
    r"\b(?:every|each) (?:day|night|morning|evening|week|weekend|monday|tuesday|wednesday|thursday|friday|saturday|"
    r"sunday)\b|\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|twice|once|a couple of|a few)\s+(?:[a-z]+\s+){0,2}?"
    r"(?:a|per) (?:day|night|week)\b|\bdaily\b|\bmost (?:days|nights|mornings)\b|"
    r"\b(?:twice|\d+ times|three times|four times) a (?:day|week|month)\b|"
    r"每天|每晚|每早|每周|每星期|(?<![今昨明前后当整半])天天|一天[一两二三四五六七八九十\d]+(?:杯|根|次|顿|瓶)|"
    r"(?:一|每)周[一两二三四五六七\d]+次",
    _I,
)
# A routine is the user's: "I run every morning", "我每天晨跑", not "the bus comes twice a day" or
# "she texts me 5 times a day" (found in review).
_MY_ROUTINE = re.compile(r"^\W*(?:i|i'm|i've|im|my|we|our)\b|\b(?:i|we)\s+(?:\w+\s+)?(?:run|swim|walk|drink|eat|go|take|"
                         r"meditate|cycle|bike|train|work out|read|practi[sc]e|study|cook|do)\b|^\W*我(?!们的?(?:公司|小区))|^\W*每(?:天|周|晚)(?!都有)", _I)
_INTEREST_RE = re.compile(
    r"热衷|着迷|养了|开始学|正在学|在学|学了[^，。]{0,6}(?:年|个月)|做志愿者|当志愿者|收藏|"
    r"\bpassionate\b|\bpassion\b|\bmy go-to\b|\bdrawn to\b|\bobsessed with\b|"
    r"\bI(?:'ve| have) (?:had|owned|kept) (?:them|it|him|her|my \w+) for\b|"
    r"\bI(?:'ve| have) been (?:\w+ )?(?:playing|learning|practi[cs]ing|doing|collecting|training|studying|"
    r"volunteering|working on|writing|painting|cooking|baking)\b|\bbeen (?:playing|learning|doing) (?:it|this|that) for\b|"
    r"\b(?:just )?(?:started|starting|took up|taking up|picked up) (?:doing |playing |learning |practi[cs]ing |taking )?"
    r"(?:a |an |my |some )?\w+(?:ing|yoga|classes|lessons|guitar|piano|drums)\b|"
    r"\bI(?:'m| am) (?:currently |now )?(?:learning|practi[cs]ing|training (?:in|for))\b|"
    r"\bI(?:'m| am) (?:currently |now )?(?:doing|playing) (?!fine|well|good|great|ok\b|okay|alright|better|worse|"
    r"nothing|something|anything|it\b|that\b|this\b|the dishes|my best)\w+|"
    r"\bI(?:'ve| have) worked with\b|\bmy (?:pets?|dogs?|cats?|snakes?|turtles?|hamsters?|rabbits?|parrots?|horses?)\b|"
    r"\b(?:I|we) (?:have|own|keep|got|adopted|rescued) (?:a |an |any |some |two |three |\d+ )?(?:\w+ )?"
    r"(?:pets?|dogs?|cats?|puppy|puppies|kittens?|snakes?|turtles?|hamsters?|rabbits?|parrots?|horses?)\b|"
    r"我(?:家)?(?:有|养)(?:[一二两三四五几\d](?:只|条|个))?(?:宠物|猫|狗|小猫|小狗)|"
    r"\bvolunteer(?:s|ed|ing)?\b|\bmy (?:\w+ )?collection\b|\bI collect\b|\bI play (?:the )?(?!with\b|along\b|around\b)[a-z]{3,}|"
    r"\bI(?:'m| am) (?:currently |still )?(?:working on|looking for|considering|trying to|participating in|"
    r"competing in)\b|\bthese days\b",
    _I,
)
_OPINION_RE = re.compile(
    r"觉得|感觉|认为|还行|还可以|一般般|不错|挺|有点|"
    r"\bthink\b|\bfeel\b|\bseems?\b|\bkind of\b|\bsort of\b|\bpretty\b|\bnot bad\b|\bmeh\b",
    _I,
)
_SMALL_TALK_RE = re.compile(
    r"(?:(?:你好|您好|嗨|哈+|呵+|嘿+|嘻+|谢谢(?:你|您|啦)?|多谢|感谢|好的|好吧|好|嗯+|哦+|噢+|收到|明白了?|知道了|"
    r"再见|拜拜|早上好|早安|晚安|午安|晚上好|没事|没关系|不客气|ok|okay|k|hi|hello|hey|yo|thanks|thank you|thx|ty|"
    r"lol|lmao|haha+|hehe+|bye|goodbye|see you|good (?:morning|night|evening|afternoon)|cool|nice|great|"
    r"got it|sure|yes|no|yep|yeah|nope|alright|you too|np|no problem|welcome|so much|very much|a lot|again|"
    r"all|everyone|guys|buddy|man|非常|真是|太|啦|呀|哦|了|你|您)\s*)+",
    _I,
)
_EPISODE_RE = re.compile(
    r"去了|去过|见了|见过|参加了|买了|看了|吃了|玩了|做了|完成了|回了|到了|办了|结婚了|毕业了|生了|发生了|旅行|出差|"
    r"\b(?:went|visited|met|attended|bought|saw|watched|ate|traveled|travelled|flew|finished|celebrated|"
    r"graduated|got married|had (?:a|an|dinner|lunch|breakfast))\b",
    _I,
)
# Emotional salience (MemoryBank, Generative Agents' "poignancy"): what moved the user is what a
# companion is expected to remember. Life milestones and strongly felt experiences are kept (4);
# an experience told with a feeling lives a year (3). Reactions to someone else's news ("so happy
# for you", "sorry to hear that") are not the user's experience and get no boost.
_MILESTONE_RE = re.compile(
    r"第一名|第二名|第三名|冠军|亚军|获奖|得奖|颁奖|奖学金|奖牌|奖状|获得了?[^，。,.]{0,10}(?:奖|名|称号)|赢得|考上|录取|"
    r"毕业|升职|晋升|加薪|结婚|订婚|婚礼|求婚|生了(?:宝宝|孩子|儿子|女儿)|出生了|去世|过世|葬礼|离婚|分手|住院|"
    r"手术|车祸|退休|失业|被裁|裁员|买了?房|领养|收养|第一次|"
    r"\bwon\b|\bwinning\b|\b(?:first|second|third) place\b|\bchampion(?:ship)?s?\b|\bawards?\b|\bawarded\b|"
    r"\bprize\b|\bscholarship\b|\bmedal\b|\bpromot(?:ed|ion)\b|\bgraduat(?:ed|ion)\b|\braise\b|"
    r"\bgot (?:accepted|admitted|engaged|married|hired|fired|divorced|adopted)\b|\bwedding\b|\bproposed\b|"
    r"\bpassed away\b|\bdied\b|\bfuneral\b|\bbroke up\b|\bdivorc|\bhospital(?:ised|ized)?\b|\bsurgery\b|"
    r"\baccident\b|\bretir(?:ed|ement)\b|\blaid off\b|\badopt(?:ed|ion)\b|\bnew job\b|"
    r"\bbought (?:a|our|my) (?:house|home|flat|apartment)\b|\bfirst time\b",
    _I,
)
_EMOTION_WORDS = (
    r"开心|高兴|快乐|喜悦|幸福|兴奋|激动|感动|自豪|骄傲|满足|欣慰|难过|伤心|悲伤|痛苦|失落|沮丧|孤独|害怕|恐惧|"
    r"紧张|焦虑|担心|生气|愤怒|委屈|崩溃|后悔|尴尬|失望|心碎|绝望|惊喜|感激|"
    r"happy|glad|joyful|thrilled|excited|proud|grateful|sad|upset|heartbroken|devastated|"
    r"lonely|scared|afraid|terrified|nervous|anxious|worried|angry|furious|frustrated|disappointed|"
    r"embarrassed|ashamed|overwhelmed|stressed|miserable|ecstatic|overjoyed|delighted|stoked|struggling|peaceful|motivated|motivating|inspired|"
    # Parity: the English and Chinese names of the same feelings (a zh/en parallel test set).
    r"恼火|烦躁|嫉妒|吃醋|如释重负|不安(?!全)|discouraged|annoyed|relieved|uneasy|jealous|elated|regret(?:ful)?|wronged"
)
_EMOTION_RE = re.compile(rf"(?:{_EMOTION_WORDS})", _I)
_INTENSE_EMOTION_RE = re.compile(
    # Not 很: a Chinese adjective takes it by default ("我很开心" is "I'm happy"), so it marks no
    # strength; "好开心" / "真开心" ("so happy") do.
    rf"(?:非常|特别|十分|极其|无比|超级|太|好|真)(?:的)?(?:{_EMOTION_WORDS})|"
    rf"(?:急|气|吓|烦|累|难受|伤心|开心|高兴)死(?:我|人)?了|"
    rf"\b(?:very|so|really|extremely|incredibly|deeply|truly|super|totally)\s+(?:{_EMOTION_WORDS})\b|"
    rf"(?:{_EMOTION_WORDS})(?:极了|得不得了|不已)|"
    r"心碎|崩溃|痛哭|狂喜|欣喜若狂|伤心欲绝|玩得(?:很|非常|特别|超级?)?(?:尽兴|嗨)|"
    r"\b(?:heartbroken|devastated|terrified|furious|ecstatic|overjoyed|thrilled|elated)\b|\bover the moon\b|"
    # English says "very happy" as often with an idiom as with an adverb: "had a great time" is
    # what "玩得非常开心" is translated to, so it counts like its Chinese twin.
    r"\bhad (?:a|an|such a|the most) (?:\w+ )?(?:great|wonderful|fantastic|amazing|brilliant|lovely|fabulous|"
    r"awesome|incredible|marvell?ous|terrific|fun) time\b|\bhad (?:a|an|such a) (?:\w+ )?blast\b|"
    r"\bhad (?:so much|such|a lot of|lots of|tons of|great|loads of) fun\b",
    _I,
)
_REACTION_RE = re.compile(
    rf"(?:为|替)(?:你|他|她|你们|他们)(?:感到)?(?:{_EMOTION_WORDS})|听到[^，。,.]{{0,12}}(?:{_EMOTION_WORDS})|"
    rf"(?:{_EMOTION_WORDS})[^，。,.！!]{{0,4}}(?:见到|看到|认识)(?:你|您)|(?:见到|看到|认识)(?:你|您)[^，。,.！!]{{0,4}}(?:{_EMOTION_WORDS})|"
    rf"\b(?:{_EMOTION_WORDS}) (?:for|of) (?:you|him|her|them|u|y'all)\b|\b(?:{_EMOTION_WORDS}) to (?:hear|know)\b|"
    # "happy to see you / that" answers someone; "happy to see the pandas" is the user's own moment.
    rf"\b(?:{_EMOTION_WORDS}) to see (?:you|u|that|this|it|how|your|him|her|them|everyone)\b|"
    rf"\b(?:{_EMOTION_WORDS}) (?:that )?(?:you|u)\b|\bsorry (?:to|for|about)\b|\bcongrat|"
    r"\b(?:you|u|y'all)(?: guys| all)?(?: must| probably| really| surely)?(?: have|'ve)? had (?:a|an|such|so|the|lots|loads|tons|great)\b",
    _I,
)


def _salience(text: str) -> int:
    """4 for a life milestone or a strongly felt experience, 3 for a felt one, 0 otherwise."""
    if _REACTION_RE.search(text):
        return 0
    if _MILESTONE_RE.search(text) or _INTENSE_EMOTION_RE.search(text):
        return 4
    return 3 if _EMOTION_RE.search(text) else 0


_PROCEDURAL_RES = (
    re.compile(
        r"(?:请|以后|今后|每次|总是|始终|一律|记得|不要|别)[^。！？!?]{0,12}"
        r"(?:回答|回复|答复|称呼我|叫我|提醒我|格式|语气|简短|简洁|详细|用中文|用英文|用英语|说话|翻译|预订|订票|订酒店)"
    ),
    re.compile(r"用(?:简体|繁体)?(?:中文|英文|英语|日语)(?:回答|回复|交流|说|和我|跟我)"),
    re.compile(r"(?:回答|回复)(?:时|的时候)?(?:请|要|尽量)?(?:简短|简洁|详细|用)"),
    re.compile(r"靠窗|靠过道|靠走道|叫我[^，。,.]{1,6}|称呼我"),
    re.compile(
        r"\b(?:please|always|never|from now on|in (?:the )?future|going forward|next time|when you)\b[^.!?]{0,40}"
        r"\b(?:answer|reply|replies|respond|responses?|write|call me|address me|format|summari[sz]e|explain|"
        r"remind me|book|translate|speak|talk to me|use (?:english|chinese|metric|bullet))\b",
        _I,
    ),
    re.compile(
        r"\b(?:answer|reply|respond|talk to me|write)\b[^.!?]{0,20}\b(?:in (?:english|chinese|mandarin)|briefly|"
        r"concisely|in detail|in bullet|short)\b",
        _I,
    ),
    re.compile(r"\bcall me\b|\b(?:aisle|window) seats?\b|\bwhen (?:booking|ordering|you book)\b|"
               r"\bI prefer (?:short|brief|concise|detailed|bullet|answers|replies|responses)\b", _I),
)


@lru_cache(maxsize=8192)  # pure; importance and may_contradict both ask it of each new text
def _is_small_talk(text: str) -> bool:
    stripped = re.sub(r"[\s\W_]+", " ", text, flags=re.UNICODE).strip()
    if not stripped:
        return True
    return _SMALL_TALK_RE.fullmatch(stripped + " ") is not None or not keyword_tokens(text)


@lru_cache(maxsize=8192)  # pure; importance and memory type both ask it of each new text
def _is_procedural(text: str) -> bool:
    return any(r.search(text) for r in _PROCEDURAL_RES)


# Lasting personal facts: who the user is, whatever the day (blood type, home town, native
# language, handedness, height, a lifelong team or habit). They were rated 2 and expired after
# 180 days while the Chinese twin of the same fact was kept: the same rule in both languages.
# A pet of one's own is family: it lives for years and answers "what's my dog's name?".
_PET_RE = re.compile(
    r"\b(?:my|our)\s+(?:\w+\s+){0,2}(?:dog|cat|puppy|kitten|pet|parrot|rabbit|bunny|hamster|guinea pig|"
    r"tortoise|turtle|horse|pony|goldfish|budgie|ferret)s?\b|"
    r"\b(?:I|we)(?:'ve| have| has| got| adopted| own| rescued)+\s+(?:a|an|two|three)\s+(?:\w+\s+){0,2}(?:dog|cat|"
    r"puppy|kitten|pets?|parrot|rabbit|hamster|beagle|labrador|poodle|terrier|retriever|spaniel|greyhound|collie|"
    r"husky|corgi|tabby)s?\b|"
    r"(?:养了|养着|养的|家有|家里有|领养了)[^，。]{0,4}(?:猫|狗|鸟|兔|龟|鱼|仓鼠|鹦鹉)|(?:我家|我的)(?:猫|狗|小猫|小狗)",
    _I,
)
_LASTING_RE = re.compile(
    r"blood type|blood group|\bgrew up\b|\bhome ?town\b|\boriginally from\b|\bI'?m from\b|\bI am from\b|"
    r"\bborn (?:and raised )?in\b|\bnative (?:language|tongue|speaker)\b|\bmother tongue\b|\bfirst language\b|"
    r"\bleft-handed\b|\bright-handed\b|\bcolou?r ?-?blind\b|\bdeaf\b|\bhard of hearing\b|\b(?:near|short|far)-?sighted\b|"
    r"\bI'?m \d['’]\s?\d{1,2}\b|\b\d{3} ?cm tall\b|\b\d(?:\.\d+)? ?m tall\b|\bnight owl\b|\bmorning person\b|"
    r"\bearly bird\b|\b(?:my|our) whole lives?\b|\ball my life\b|\bsince I was (?:a kid|a child|little|young|small|\d+)\b|"
    r"\bsince childhood\b|\bforever\b|\balways (?:been|had|hated|loved|used|worn|supported)\b|\bI support\b|"
    r"\b(?:huge|big|lifelong|die-?hard) fan\b|\bI'?m an? \w+ fan\b|\bzodiac\b|\bnationality\b|\bcitizen\b|"
    r"\b(?:Christian|Muslim|Buddhist|Jewish|Hindu|Catholic|atheist)\b|\bonly child\b|\btwin\b|\bthe (?:oldest|youngest|middle) "
    r"(?:child|kid|of)\b|"
    r"血型|型血|老家|家乡|籍贯|出生在|出生于|在[^，。]{1,8}长大|土生土长|从小就?|打小|"
    r"(?:我|我妈|我爸|我爷爷|我奶奶)是[^，。]{1,4}人(?=[，。,.！!]|$)|母语|左撇子|右撇子|色弱|色盲|耳聋|聋|听力不|近视|远视|"
    r"身高|一米[五六七八九]|属[鼠牛虎兔龙蛇马羊猴鸡狗猪]|星座|夜猫子|早起的人|球迷|铁杆|一直(?:都)?(?:是|用|喜欢|讨厌|支持|不)|"
    r"独生子|独生女|双胞胎|排行|信佛|基督徒|穆斯林|国籍|"
    # bodily traits that last: 怕冷, motion sickness, a fear of heights
    r"怕冷|怕热|晕车|晕船|晕机|恐高|怕高|失眠|\bmotion sickness\b|\b(?:car|sea|air)sick\b|"
    r"\b(?:scared|afraid|terrified) of heights\b|\binsomnia\b|\bclaustrophobic\b|\bi (?:always )?get cold easily\b|"
    # a blood group said as what one is ("I'm O negative"), a size one wears
    r"\bI'?m (?-i:AB|A|B|O) ?(?:positive|negative|pos|neg|[+-])(?:\s*blood(?: type| group)?)?(?=\s*(?:[,.;!]|$|so\b|and\b|but\b))|"
    r"\bI wear (?:a |an )?(?:(?:US|UK|EU|AU) (?:size )?|size )\d{1,2}(?:\.5)?\b|\b(?:my|our) (?:shoe|ring|dress|shirt|jeans?|bra) size\b|"
    r"鞋码|(?:我|一直|平时|都)[^，。,.]{0,4}穿[^，。,.]{0,4}(?:\d{2}(?:\.5)?|[三四]十[一二三四五六七八九]?)码|"
    # what the user asks to be kept, and the codes people keep here
    r"(?:^|[.!,;:]\s*)(?:please\s+)?(?:remember (?:this|that)(?! time)|save this|note this down)\b|"
    r"\b(?:writing (?:it|this) (?:down|here)|so I don'?t (?:lose|forget) it|keep (?:this|it) (?:for me|safe))\b|"
    r"(?:^|[\s，,。！!])(?:请|麻烦)?你?(?:帮我)?(?:记住|记一下|记下来|帮我记|存一下)(?!了吗|没)|帮我存|"
    r"\b(?:wi-?fi|door|gate|locker|alarm|garage) (?:password|pw|pass|code)\b(?=\s*(?:is\b|:|=|-))|\bpasscode is\b|"
    r"wifi密码|门禁密码|门锁密码",
    _I,
)


def importance_of(text: str, now: datetime) -> int:
    """1-5 by rules: health/safety 5; slots, family, job, firm preferences, dietary restrictions,
    tobacco and drink, lasting personal facts, instructions, life milestones and strongly felt experiences 4; plans, dated events, hobbies,
    lasting interests, felt experiences 3;
    opinions and other content 2; small talk 1."""
    if _SAFETY_RE.search(text):
        return 5
    if _is_small_talk(text):
        return 1
    if any(r.search(text) for r in (_ADDRESS_RE, _ARRANGEMENT_RE, _CONTACT_RE, _BIRTHDAY_RE, _FAMILY_RE, _JOB_RE, _FIRM_PREF_RE,
                                    _DIET_RE, _LASTING_RE, _PET_RE, _SUBSTANCE_RE)):
        return 4
    if _is_procedural(text):
        return 4
    salience = _salience(text)
    if salience:
        return salience
    if any(r.search(text) for r in (_PLAN_RE, _HOBBY_RE, _INTEREST_RE, _EPISODE_RE)) or (
            _ROUTINE_RE.search(text) and _MY_ROUTINE.search(text)):
        return 3
    if _OPINION_RE.search(text):
        return 2
    if parse_time_range(text, now) is not None:
        return 3
    return 2



def memory_type_of(text: str, now: datetime) -> MemoryType:
    """Health > procedural > slot facts > episodic > declarative (see the module docstring)."""
    if _SAFETY_RE.search(text):
        return MemoryType.DECLARATIVE
    if _is_procedural(text):
        return MemoryType.PROCEDURAL
    if any(r.search(text) for r in (_ADDRESS_RE, _CONTACT_RE, _BIRTHDAY_RE, _FAMILY_RE, _JOB_RE, _LASTING_RE)):
        return MemoryType.DECLARATIVE
    if parse_time_range(text, now) is not None or _EPISODE_RE.search(text):
        return MemoryType.EPISODIC
    return MemoryType.DECLARATIVE


def summarize(text: str, limit: int = 120) -> str:
    """The first sentence, cut to ``limit`` characters."""
    sentences = split_sentences(text)
    first = sentences[0] if sentences else text.strip()
    first = " ".join(first.split())
    return first if len(first) <= limit else first[: limit - 1].rstrip() + "…"


