"""The offline newer-wins judge, pair by pair: what must replace and, as much, what must not.

Both languages; each pair is (newer, older). The engine-level behaviour (through the chat, on
SQLite and PostgreSQL) is in test_truth_over_time.py; these pin the rules themselves.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from memory_core.llm.base import MemoryBrief
from memory_core.llm.offline import OfflineLLM
from memory_core.llm.offline.slots import supersedes_text
from memory_core.text.facts import is_paraphrase, negations, same_values, twin_values
from memory_core.text.subject import subject_of

NOW = datetime(2024, 6, 1, tzinfo=timezone.utc)
LLM = OfflineLLM()


def replaces(newer: str, older: str, newer_context: str | None = None) -> bool:
    return LLM.supersedes(MemoryBrief("n", newer, NOW, context=newer_context),
                          MemoryBrief("o", older, NOW - timedelta(days=30)))


@pytest.mark.parametrize("newer,older", [
    # corrections of one value
    ("My blood type is A-", "My blood type is A+"),
    ("My locker code is 4827", "My locker code is 4821"),
    ("wait no, it's BA278. I swapped the digits, sorry", "My flight home is BA287 on the 14th, leaves at 9:40"),
    ("Max's classroom is room 21, I mixed it up.", "Max is in Mr. Patel's class, room 12."),
    ("My doctor raised my lisinopril to 15 mg", "I take 10 mg of lisinopril every morning"),
    ("我的房间号改成1302了", "我的房间号是1203"),
    ("航班号记错了，应该是MU5173", "我下周三的航班是MU5137，上海飞昆明"),
    ("班主任名字是张莉，草字头的莉，上次写错了", "我女儿的班主任叫张丽"),
    ("我的Rh血型是阴性，之前看错了", "我的Rh血型是阳性"),
    # changes of a single-valued topic
    ("Great! I moved to Porto last week, still unpacking boxes.", "I live in Lisbon, in a tiny flat near the river."),
    ("I bike to work now since they opened the new bike lane.", "I take the 42 bus to work every day."),
    ("The studio moved yoga to Wednesday evenings, same time.", "My yoga class is on Tuesdays at 6."),
    ("Big reorg at work. My new boss is Rachel Nguyen.", "My manager is Tom Becker, he's pretty laid back."),
    ("宽带换成移动了，500兆一年才六百", "我家宽带是电信的，100兆"),
    ("开学了 儿子升大班了，明年就要上小学了", "儿子在幼儿园上中班，最近特别调皮"),
    ("又搬家了，现在住在渝北", "我在北京上班，住在回龙观"),
    # the other polarity
    ("I am not allergic to penicillin after all", "I am allergic to penicillin"),
    ("I can swim now! Finished the adult beginner lessons.", "I can't swim, never learned."),
    ("I quit smoking! 3 months clean today.", "I smoke about a pack a day, I know, I know."),
    ("I became vegetarian last year", "I love steak"),
    ("我戒烟了", "我每天抽一包烟"),
    # a restatement with more
    ("Every day I take a vitamin D supplement, 1000 IU.", "I take vitamin D every day."),
    ("Boston is where my sister works, as a nurse at Mass General.", "My sister is a nurse in Boston."),
    ("花粉会让我过敏，一到春天就难受", "我对花粉过敏"),
    ("My cat Tom is grey", "I have a cat named Tom"),
    ("血压一直偏高，高血压好几年了", "我有高血压"),
    # a state that ends or begins (states.json)
    ("Doctor put me on metformin for my blood sugar, 500 mg twice a day.", "I don't take any medication, not even vitamins."),
    ("ok I caved and made an Instagram, mostly for my pottery stuff", "I'm not on social media at all, deleted everything in 2019."),
    ("膝盖半月板受伤了，现在完全不跑了", "我每天晚上跑步五公里，雷打不动"),
    ("我当爸爸了！闺女昨天晚上出生的，六斤二两", "我还没有孩子，打算过两年再说"),
    ("Biscuit passed away last week. Fourteen years with us.", "We have a beagle named Biscuit, he's 13 and very spoiled."),
    # swaps and slips this session found
    ("国庆改去新疆了，机票酒店都订好了，去伊犁", "国庆打算带爸妈去云南玩一圈，大理丽江那边"),
    ("离开北京了，去成都工作了", "我在北京上班，住在回龙观"),
    ("我们分手了，不想多说", "我女朋友叫小雨，我们是大学同学"),
    ("Sorry — plate is KJ21 XPF, not what I said before.", "My license plate is KJ21 XPT, in case I need it."),
    ("Sorry, UTC-3!! I'm in Buenos Aires, not Moscow haha", "My time zone is UTC+3 for scheduling purposes."),
    # where one stays for years of study or work is a home
    ("Finished the degree and moved to Munich for a job at BMW.", "I'm in Berlin for my master's, in Neukölln."),
    ("毕业了，搬到慕尼黑上班了", "我在柏林读研，住在新克尔恩"),
    ("Moved to Austin in March", "I'm based in Denver"),
    # a number said later in the sentence is the value ("完整的是[PHONE#..]")
    ("我妈电话号码最后两位是23，完整的是[PHONE#29d191]", "我妈的手机号是[PHONE#8264cd]"),
    # an irregular past form is its verb: "flew" ends "never fly"
    ("I flew to Rome in May, the flight was fine actually", "I never fly, planes scare me"),
])
def test_replaces(newer: str, older: str) -> None:
    assert replaces(newer, older)


@pytest.mark.parametrize("newer,older", [
    # questions state nothing
    ("我住在哪里？", "我住在杭州市西湖区文三路。"),
    ("我的电话是多少", "我的电话是[PHONE]"),
    ("What's my locker code again", "My locker code is 4821"),
    ("is my wife's bday in june or july", "My wife's birthday is June 14"),
    # other people
    ("我表弟在杭州上班", "我的上司在深圳上班"),
    ("Nicolas: I hate bubble tea", "Vanessa: I like bubble tea"),
    ("My brother lives in Berlin", "My sister lives in Berlin"),
    ("My son is 7", "My daughter is 5"),
    ("My boss's phone is 555-1234", "My phone is 555-1235"),
    # things that add up
    ("我对花生过敏", "我对芒果过敏"),
    ("I'm also allergic to shellfish", "I'm allergic to peanuts"),
    ("I started learning Spanish too", "I'm learning French"),
    ("我右眼近视400度", "我左眼近视350度"),
    # events are not corrections of each other
    ("I ran 10 km on Sunday", "I ran 5 km on Saturday"),
    ("I had dinner in Chaoyang district with Anna", "I live in Beijing, in Chaoyang district"),
    # the same thing, no new value, and less said
    ("Lisbon", "I live in Lisbon, near the river"),
    # a restatement must not drop a fact: the colour stays
    ("My cat Tom loves tuna", "My cat Tom is grey"),
    # two trips, two places: no restatement
    ("我去苏州园林骑了自行车", "我去杭州西湖骑了自行车"),
    # a constraint is lifted only when said so, never by a mention of the thing
    ("下周公司年会，要去给领导敬酒", "我对酒精过敏，一点酒都不能碰"),
    ("I'm bringing wine to the party", "I don't drink alcohol, I'm sober for 3 years"),
    # someone else's death does not retire memories about them that are history
    ("Rose passed away in May", "My grandma Rose taught me to bake"),
    # a state of someone else does not end the user's
    ("My mom takes metformin now", "I don't take any medication"),
    # a weekend somewhere is no home; a son's school is the son's
    ("Moved to Munich last month", "I'm in Berlin for the weekend, it's lovely"),
    ("I'm in town for a job interview", "I live in Denver"),
    ("We drove to Denver for the weekend", "I never fly, planes scare me"),
    # a named colleague's or friend's news is theirs, not the user's (each replaced the user's before)
    ("小王现在在谷歌上班了", "我在微软上班"),
    ("王丽搬到上海了", "我住在杭州"),
    ("Anna's working at Google now", "I work at Microsoft"),
    ("Anna's job is at Google now", "My job is at Microsoft"),
    ("I'm in London for the job fair", "I live in Denver"),
    ("I'm in Paris for the exchange dinner tonight", "I live in Denver"),
    ("我搬到慕尼黑了", "我儿子在北京读书"),
    # someone else's number, and the same number said again
    ("我同事小王的电话号码是[PHONE#74aedc]", "我的手机号是[PHONE#197fb7]"),
    ("My dentist's number is [PHONE#b8a155]", "My phone number is [PHONE#a5e71a]"),
])
def test_does_not_replace(newer: str, older: str) -> None:
    assert not replaces(newer, older)


def test_a_reply_answering_a_question_replaces_like_a_statement() -> None:
    assert replaces("Blue", "My favourite colour is green", newer_context="Nice! What's your favourite colour?")
    assert replaces("Porto, since March", "I live in Lisbon", newer_context="Where do you live now?")
    assert not replaces("I'd rather not say", "I live in Lisbon", newer_context="Where do you live now?")


@pytest.mark.parametrize("a,b", [("A+", "A-"), ("4821", "4827"), ("room 12", "room 21"), ("not allergic", "allergic"),
                                 ("on Tuesdays", "on Wednesdays"), ("my sister", "my brother")])
def test_values_tell_a_correction_from_a_repeat(a: str, b: str) -> None:
    assert not same_values(f"It is {a}", f"It is {b}")


def test_twin_values_are_slips_not_news() -> None:
    assert twin_values("code 4827", "code 4821") and twin_values("BA278", "BA287")
    assert twin_values("Hansen", "Hanson") and twin_values("张莉", "张丽")
    assert not twin_values("I have 3 cats", "I have 2 cats")  # one digit: may be news
    assert not twin_values("花生", "芒果") and not twin_values("右眼", "左眼", words=False)


def test_paraphrase_folds_only_what_adds_nothing() -> None:
    assert is_paraphrase("My grandmother lives with me.", "I live with my grandmother.", 0.975, 0.95)
    assert not is_paraphrase("My cat Tom is grey", "I have a cat named Tom", 0.95, 0.95)  # "grey" would be lost
    assert not is_paraphrase("我对花生过敏", "我对芒果过敏", 0.963, 0.95)
    assert not is_paraphrase("My sister Anna lives in Berlin and works as a nurse there",
                             "My sister Anna lives in Berlin", 0.97, 0.95)  # adds the job: replace, not fold


@pytest.mark.parametrize("text,subject", [
    ("我的上司在深圳上班", "rel:领导"), ("我表弟在杭州上班", "rel:表弟"), ("我在阿里上班", "self"),
    ("Vanessa: I like bubble tea", "vanessa/self"), ("My wife and I live in Paris", "self"),
    ("Tom lives in Paris", "name:tom"), ("我和奶奶住在一起", "self"), ("My mom lives in Ohio", "rel:mother"),
    # a thing put first, then "I'm ...": the user's ("I'm" is a verb, as "I am" is)
    ("Peanuts — I'm allergic to them, so keep them out", "self"), ("My son's scared of dogs", "rel:son"),
    # a name with 's, and a Chinese name opening the clause (jieba's nr), are whom it is about
    ("Lisa's moving to Paris", "name:lisa"), ("Anna's job is at Google", "name:anna"), ("Today's a good day", "self"),
    ("王丽搬到上海了", "name:王丽"), ("昨天小王请假了", "name:小王"), ("老公在腾讯上班", "rel:配偶"),
    ("我搬到上海了", "self"),
    # what someone teaches, lets, makes or helps the user do is the user's doing
    ("孙子教会我用微信付钱了", "self"), ("妈妈让我去学钢琴", "self"), ("My grandson taught me to use WeChat Pay", "self"),
    ("My brother helped me move to Berlin", "self"), ("Nicolas: my wife made me quit smoking", "nicolas/self"),
    # ... but not what they do for the user, or tell of themselves
    ("My brother made me a cake", "rel:brother"), ("My sister told me she moved to Berlin", "other"),
    ("我妹妹让我们去她家", "rel:妹妹"), ("My sister lives in Berlin and she told me to visit", "rel:sister"),
])
def test_who_a_statement_is_about(text: str, subject: str) -> None:
    assert subject_of(text) == subject


@pytest.mark.parametrize("newer,older", [
    ("复查了，医生说我血压正常了，药已经停了", "我有高血压，每天早上吃一片氨氯地平"),
    ("我的血压正常了", "我有高血压"),
    ("My asthma is gone, I grew out of it", "I have asthma"),
    ("My doctor said my diabetes is in remission, no more insulin", "I have type 2 diabetes and take insulin"),
])
def test_a_condition_said_to_be_over_is_lifted(newer: str, older: str) -> None:
    """A medical constraint is lifted only when the user says it is over, naming it."""
    assert replaces(newer, older)
    assert LLM.may_contradict(newer)  # the write checks it although it states no slot


@pytest.mark.parametrize("newer,older", [
    ("今天心情好了", "我有高血压"),                     # something else got better
    ("医生说我妈血压正常了", "我有高血压"),             # the mother's, not the user's
    ("我表弟说他血压正常了", "我有高血压"),
    ("我的哮喘还没好", "我有哮喘"),                     # not over
    ("My knee is better now", "I have asthma"),         # another condition, and only "better"
    ("My cold is gone", "I have asthma"),
    ("I am not cured of my asthma", "I have asthma"),
    ("My mum's asthma is gone", "I have asthma"),
])
def test_a_condition_is_not_lifted_by_another_thing_or_person(newer: str, older: str) -> None:
    assert not replaces(newer, older)


def test_a_pets_death_is_checked_against_the_pet() -> None:
    """A death states no slot, yet ends the memory of having the pet; it is put to the judge."""
    newer = "Biscuit passed away last week. Fourteen years with us. I'm heartbroken."
    assert LLM.may_contradict(newer) and LLM.may_contradict("我们家的猫咪咪上周去世了")
    assert replaces(newer, "We have a beagle named Biscuit, he's 13 and very spoiled.")
    assert not replaces(newer, "My sister Anna lives in Porto")


@pytest.mark.parametrize("text,lasting", [
    ("We have a beagle named Biscuit, he's 13 and very spoiled.", True),
    ("My dog Rex is a labrador", True),
    ("I've got two cats", True),
    ("我家有只猫叫咪咪", True),
    ("我养了一条狗", True),
    ("I saw a dog in the park", False),
    ("My neighbour has a dog that barks all night", False),
    ("Hot dogs for lunch", False),
    ("I met a guy named Tom", False),
])
def test_a_pet_of_ones_own_is_kept_like_family(text: str, lasting: bool) -> None:
    """Rated 4 (kept for years, like family): "what's my dog's name?" months later."""
    assert (LLM.analyze(text, NOW).importance >= 4) is lasting


def test_a_repeat_naming_the_model_without_the_make_restates_it() -> None:
    """"Mazda CX-5" and "CX-5" are one name: the newer, which adds the year, holds the fact."""
    older = "I drive a red Mazda CX-5."
    assert replaces("My car is a CX-5. The red one, 2020 model.", older)
    assert not replaces("My sister drives a red Mazda CX-5", older)  # someone else's car
    assert not replaces("I drive a blue Mazda 3", older)  # another car: maybe a second one
    assert not replaces("我姐姐开一辆红色的马自达CX-5", "我开一辆红色的马自达CX-5")
    # the make said before the model is part of its name, in both languages
    assert replaces("My car is a Model Y, white", "I drive a Tesla Model Y")
    assert replaces("我的车是Model Y，白色的", "我开的是特斯拉Model Y")
    assert not replaces("我姐姐的车是Model Y，白色的", "我开的是特斯拉Model Y")  # her car
    assert not replaces("My wife drives a Model Y", "I drive a Tesla Model Y")


def test_especially_is_no_negation() -> None:
    """特别 ("especially") holds 别 ("don't"): "我特别怕冷" was read as negated, so its restatement
    "我这个人怕冷" looked like a flip."""
    assert negations("我特别怕冷") == 0 and negations("我特别不喜欢吃辣") == 1
    assert negations("我和别人合租") == 0 and negations("别给我推荐海鲜") == 1


def test_a_restatement_in_other_words_replaces_only_the_same_fact() -> None:
    """The thing the older statement is about named again, in other words, replaces it; the same
    frame about another thing, or another fact of the same thing, does not."""
    assert replaces("Heights terrify me, I can't even stand on a ladder.", "I'm scared of heights.")
    assert replaces("家里有条柯基，叫饺子", "我们家养了一只柯基")
    assert not replaces("I'm scared of spiders, they terrify me.", "I'm scared of heights.")
    assert not replaces("我们家还养了一只布偶猫", "我们家养了一只柯基")
    assert not replaces("My cat Tom loves tuna", "My cat Tom is grey")  # drops the colour
    assert not replaces("Lisbon", "I live in Lisbon, near the river")  # says less
    assert not replaces("I went to Paris again this spring with my wife.", "I went to Paris last summer.")


def test_a_change_of_a_named_childs_grade_or_of_doctors_replaces_the_old_one() -> None:
    """The child's name both share is who the facts are about, not the thing that stayed; a
    topic word said in the plural ("I switched doctors") is still the topic."""
    assert replaces("Mia started fifth grade this week!", "My daughter Mia is in 4th grade.")
    assert replaces("I switched doctors last month, I see Dr. Patel now.", "My doctor is Dr. Green at the Elm clinic.")
    assert not replaces("Mia started violin lessons this week!", "My daughter Mia is in 4th grade.")
    assert not replaces("Mia and I visited the Louvre this week.", "My daughter Mia is in 4th grade.")
    assert not replaces("My brother switched dentists too.", "My dentist is Dr. Green.")


def test_the_first_statement_of_several_sentences_names_whom_it_is_about() -> None:
    """"Charging is a whole new world" is the second sentence: its capital is no name."""
    assert subject_of("Sold the old car, I drive a Kia EV6 now. Charging is a whole new world.") == "self"
    assert subject_of("Dr. Obi is my dentist. She is great.") == "name:obi"  # a title's stop ends nothing
    assert subject_of("My sister moved. Anna lives in Rome now.") == "rel:sister"


@pytest.mark.parametrize("newer,older", [
    ("We adopted a kitten last week, her name is Pip.", "We don't have any pets, our building doesn't allow them."),
    ("买房了，每个月房贷六千", "我没有房贷，一直租房"),
    ("家里养了只橘猫，很黏人", "我没有养宠物，怕麻烦"),  # the dislike beside the state is no constraint on it
    ("I quit keto last month, pasta is back.", "I've been doing keto since spring, no carbs."),  # a diet said to be over
])
def test_having_now_what_one_had_none_of_ends_the_old_state(newer: str, older: str) -> None:
    assert replaces(newer, older)


@pytest.mark.parametrize("newer,older", [
    ("Our neighbour got a puppy.", "We don't have any pets."),  # someone else's
    ("我表哥买房了，房贷每月一万", "我没有房贷"),
    ("我家楼下有只猫", "我怕猫"),  # a fear of the thing is not lifted by its mention
    ("My sister is on keto too.", "I'm on the keto diet."),
    ("Keto recipes are hard to find", "I'm on the keto diet."),  # a diet is lifted only when said so
])
def test_a_mention_of_the_thing_ends_no_state(newer: str, older: str) -> None:
    assert not replaces(newer, older)


@pytest.mark.parametrize("newer,older", [
    ("Sorry, I meant B-. Just checked my donor card.", "My blood type is B+."),  # no frame word said again
    ("我查了体检报告，我其实是B型血，之前记错了", "我是AB型血"),
    ("Oops, typo earlier — it's 40 Oak Road, flat 7.", "I live at 40 Oak Road, flat 2."),
    ("公司地址：海淀区中关村大街27号，25号是隔壁楼", "公司地址是海淀区中关村大街25号"),  # a field label is no speaker
])
def test_a_value_said_to_be_corrected_replaces_the_old_one(newer: str, older: str) -> None:
    assert replaces(newer, older)


def test_a_correction_of_one_kind_of_value_leaves_another_kind_alone() -> None:
    assert not replaces("Sorry, I meant the 5th of May for the party.", "My blood type is A+.")
    assert not replaces("其实是周三开会，之前说错了", "我是O型血")


def test_a_field_label_is_no_speaker() -> None:
    from memory_core.text.speaker import speaker_label

    assert speaker_label("公司地址：朝阳区建国路86号") is None and speaker_label("我的邮箱：a@b.cn") is None
    assert speaker_label("张伟：明天见") == "张伟" and speaker_label("Caroline: hi") == "Caroline"
    assert speaker_label("Correction: it's 4827") is None and speaker_label("更正一下：是4827") is None


def test_a_role_at_a_company_is_where_one_works() -> None:
    """"我在百度做测试" states the employer as "我在百度工作" does: a move elsewhere replaces it."""
    assert replaces("跳槽到快手了，还是做测试", "我在百度做测试，天天加班")
    assert not replaces("我在家做饭，晚上吃面", "我在百度做测试，天天加班")


@pytest.mark.parametrize("newer,older", [
    ("Correction on the allergy: it's almonds I'm allergic to. My mix-up.", "I'm allergic to pistachios."),
    ("更正一下：我过敏的是芒果，之前说错了", "我对菠萝过敏"),  # 更正一下： opens a correction, not a speaker's line
    ("Sorry, I meant I love hiking.", "I love swimming."),
    ("Correction: it's shellfish I'm allergic to, not fish.", "I'm allergic to fish."),  # "Correction:" is no speaker
])
def test_a_correction_of_the_thing_in_a_frame_replaces_it(newer: str, older: str) -> None:
    assert replaces(newer, older)


@pytest.mark.parametrize("newer,older", [
    ("My new job is great, I love my team now", "I love my cat"),  # a change marker is no correction
    ("Correction: the meeting is in room B.", "I'm allergic to dogs."),  # another frame
])
def test_a_correction_leaves_other_statements_alone(newer: str, older: str) -> None:
    assert not replaces(newer, older)


@pytest.mark.parametrize("newer,older", [
    # "well..." is no sentence: the news is still one short statement
    ("well... I'm pregnant! Due in March. Didn't see it coming but we're thrilled",
     "We don't want kids, it's just the two of us."),
    ("现在我归张磊管了，他是新来的组长", "我的领导是李强，人挺好"),  # a new team lead is the boss now
    ("不去威尔士了，办了一兆韦德的私教课", "我办的是威尔士的健身卡"),  # 不去X了: no longer going there
])
def test_a_change_said_plainly_replaces_the_old_value(newer: str, older: str) -> None:
    assert replaces(newer, older)


@pytest.mark.parametrize("newer,older", [
    ("我不去上海了，太远", "我住在北京"),  # a plan dropped is no new home
    ("我同事归张磊管了，他是新来的组长", "我的领导是李强，人挺好"),  # a colleague's boss
    ("My sister is pregnant! Due in March.", "We don't want kids, it's just the two of us."),
])
def test_a_change_of_someone_else_or_of_a_plan_replaces_nothing(newer: str, older: str) -> None:
    assert not replaces(newer, older)


def test_whom_colloquial_kin_and_company_make_a_statement_about() -> None:
    """我爸 is the father; "跟同事" is company, not the subject; 老公 / 爱人 are one spouse."""
    assert subject_of("我爸是退休的中学老师") == "rel:爸爸" and subject_of("我哥在深圳") == "rel:哥哥"
    assert subject_of("我每周三晚上跟同事打羽毛球") == "self"
    assert subject_of("我老公是律师") == subject_of("我爱人是做律师的") == "rel:配偶"
    assert replaces("我爱人是做律师的，在金杜", "我老公是律师")
    assert replaces("羽毛球改到周四了，周三老加班", "我每周三晚上跟同事打羽毛球")


@pytest.mark.parametrize("older,newer", [
    # a computer is one thing at a time, but a word about something else is no new computer
    ("I have a MacBook Air for work.", "Now I order mac and cheese every Friday."),
    ("I have a Windows laptop from work.", "I now buy 10 pcs of dumplings every week."),
    ("I use a ThinkPad for work.", "I started a new computer science course now."),
    ("我的电脑是苹果电脑", "我现在换了个电脑椅，人体工学的"),
    ("My laptop is a MacBook Pro.", "I just switched my laptop wallpaper to a photo of Lisbon now."),
    ("我平时用苹果电脑", "我现在在学电脑维修"),
])
def test_a_word_near_a_computer_replaces_no_computer(older: str, newer: str) -> None:
    assert not supersedes_text(newer, older)


@pytest.mark.parametrize("older,newer", [
    ("我是个夜猫子，没有养宠物", "我现在养了一只猫"),
    ("I'm 6'4\" and I don't take any medication.", "The doctor put me on metformin now."),
])
def test_a_trait_said_beside_a_state_does_not_keep_the_state_from_ending(older: str, newer: str) -> None:
    """Traits are constraints, but not ones that need their own words to be lifted (as an allergy
    does): having no pet or no medicine beside a height still ends when one has it."""
    assert supersedes_text(newer, older)
