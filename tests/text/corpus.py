"""A labelled text set for the text task's tests: customer-support messages that a small business might sort into
six categories, written by hand for these tests (one message a line, no templates).  Each category borrows the
others' words on purpose (a refund for a late parcel, a login problem after paying, a crash during checkout) so
that word counts alone do not sort them.

``CATEGORIES``: the category names; ``TEXTS``: (text, category index) pairs; ``few_shot(k, seed)``: k examples
per category for training, the rest held out."""
from __future__ import annotations

import random

_BILLING = """
I was charged twice for the same order, can you fix this?
Why is there a £4.99 fee on my statement that I don't recognise
need a VAT invoice for order 20931 please, our accountant is chasing me
My card keeps getting declined at checkout even though there's plenty of money on it.
Hi, could you send me a receipt for my March purchase? I can't find the email anywhere.
you took the money out of my account TWICE. sort it out
Is it possible to pay by bank transfer instead of card?
The invoice lists the wrong company name — it should be Hartley & Sons Ltd, not Hartley Sons.
charged for premium after i cancelled the trial
Can I split the payment between two cards?
Our finance team needs invoices addressed to the head office in Leeds rather than the branch.
The price at checkout was higher than the one on the product page. Where did the extra €12 come from?
paypal has said payment pending for 3 days now, is my order going through or not
Please update the billing address on file to 14 Carrow Road, Norwich.
I'd like to switch from monthly to annual billing, and I assume the unused month gets credited?
Your system billed me in US dollars but I'm in Canada and expected CAD.
Apple Pay failed but my bank still shows the charge. What happened?
Can I pay for the espresso machine in three instalments?
discount code SPRING20 didn't apply and i ended up paying full price
Hello, our purchase order number must appear on the invoice or accounts payable won't release the money.
The direct debit came out on the 1st instead of the 15th like we agreed.
why am I paying sales tax, we're exempt and sent you the certificate in January
Hi there! Just wondering when my gift card balance will show up, I topped it up yesterday.
Payment failed. Tried three cards.
We were billed for 5 seats but only 3 people use it.
Could you resend invoice INV-0448? The PDF attachment was blank.
my bank flagged your charge as fraud, how do i get the order to go through now
Stop charging my card. I've asked twice already.
The subscription renewed at a higher price without any notice, which I don't think is fair.
Do you accept Klarna?
i paid but the order still says unpaid
We received two invoices for the same delivery, one dated the 3rd and one the 5th. Which one do we pay?
Good morning, I'd like copies of every invoice from the last financial year for our records.
The card you have on file expired last month, how do I put the new one in?
there's a pending authorisation of $200 from you on my card but i only spent $45
The late payment fee seems wrong; the transfer left our bank two days before the due date.
Could the invoice be in my business name rather than my own?
Wrong currency on the receipt.
My son used my card to buy a game subscription without asking. Can those charges be reversed?
how come the total went UP when I added the voucher??
My payment went through but no confirmation email came. Was I charged the right amount?
We're on the monthly plan and want to go yearly — will you prorate what we've already paid?
Your checkout timed out on the payment step and I've been charged anyway.
The amount on my statement doesn't match the invoice: £82.40 vs £78.00.
I need a credit note for the cancelled part of order 55102.
please take my old visa off, I don't want it stored with you anymore
Are your prices shown with VAT or without?
The bank says the money bounced back to you. Did you get it or should I pay again?
Hi Marta, thanks for the call earlier. As discussed, please cancel the duplicate charge from Tuesday.
I keep getting emails saying my payment is overdue, but I paid on the 2nd. Reference 7781-B.
charged 3 times for one coffee subscription, this is ridiculous
Where can I download my invoices? There's nothing under "My orders".
Can you invoice us on 30-day terms instead of taking the card payment upfront?
The promo said first month free but $14.99 left my account today.
What payment methods do you take for orders from outside the EU?
The student discount was applied on my first bill but not the second.
Hey, tried paying with Google Pay and it just spins forever. Did it take the money or not?
Invoice says 12 units, we ordered 10. Please correct it before we process payment.
Please confirm you received our bank transfer of 1,250 EUR dated 14 May.
my account got charged but the subscription still says expired
Why was a restocking fee added to my bill? Nobody mentioned that.
Need to update my payment details before the renewal goes through on Friday.
The card statement shows "ORCHARDLANE*DIGITAL" — is that you? I don't remember buying anything.
I'm the office manager at Brightwell Dental. Can we have one consolidated monthly invoice instead of one per order?
declined again. same card works everywhere else
How do I get a receipt with our company's tax number printed on it?
I was told the upgrade would be prorated, but you charged me for the full year.
Ugh. Paid, got an error, paid again, now two charges. Great.
Could you please explain the line "service adjustment" on this month's bill?
From now on the invoices should go to our accounts team's mailbox, not to me personally.
the money was taken before anything was even dispatched, is that normal?
Is there a way to pay cash when the parcel arrives?
The interest-free plan showed 0% but interest has been added to the first instalment.
Turn off auto-renew for me please, I don't want another charge in June.
Can two gift cards be used on one order?
We're a primary school and need a pro forma invoice before we can raise a payment.
The checkout added insurance I never asked for and I'd like it taken off.
Balance owing says £0.01. How do I even pay a penny?
I think your system charged the wrong card, it used my old work one.
If I pay tomorrow, does the price in my basket stay the same?
Our auditors want the delivery charge broken out separately on the invoice.
Why do I have to pay a surcharge for using a credit card? I thought that wasn't allowed here.
got a payment reminder for an order I sent back weeks ago??
Could billing be paused for two months while I'm travelling?
Billing question: are licence fees per user or per device?
I got a bill for £0. Do I need to do anything with it?
The bank transfer reference got cut off, I only typed "ORD-55". Will you still match it?
You charged the express postage rate twice on one order.
The amount in the confirmation email is different from what came out of my bank.
hi can i move my payment date to after payday, the 28th
we're still being invoiced for the plan we downgraded from last month
My bookkeeper can't work out who the merchant on my statement is. What's your legal entity name?
Is there an extra charge for paying with American Express?
Our company card has a 500 limit per transaction. Could the order be charged in two parts?
Your payment page rejects my postcode because it has a space in it.
Please stop posting paper invoices to us, email is fine.
thank you for the quick reply, but the second charge is still showing on my card as of this morning.
We paid the same invoice twice by mistake, once by card and once by transfer. Could the extra be credited to the next one?
Where does the money go if a payment fails halfway through?
Hi! You charged £29 for the Pro plan but the website says £24. Which is it?
Can't find the billing section anywhere in the new app.
The cheque we posted on the 10th, has it cleared yet?
Could you add our VAT number to the invoices you've already issued this year?
Our payment was rejected because of something called "3D Secure". What does that mean and how do we fix it?
Please put the remaining balance on the Mastercard ending 4412.
dear sir, I have not received bill for last month. kindly send.
Annual fee went from 89 to 119 — is that a mistake?
Is it normal to be charged a deposit when ordering the rental kit?
The loyalty points didn't come off the total when I paid.
Why does my invoice have tomorrow's date on it?
For an expense claim I need my last three payments itemised.
Money left my account on Monday but your site still shows "awaiting payment".
Can the invoice show the delivery address as well as the billing one?
Took my deposit and I haven't heard anything since.
How do I change from paying by card to paying by direct debit?
my partner and I both paid for the same family plan by accident
"""

_DELIVERY = """
Where is my parcel? It's been 9 days.
Tracking hasn't moved since Tuesday, it just says "in transit".
The courier left my package by the bins and it got soaked.
Can you deliver to my work address instead? I'm never home during the day.
do you ship to norway
My order arrived but only one of the two boxes came.
The driver marked it as delivered but there was nothing at my door.
How long does standard shipping take to Ireland?
I paid for next day delivery and it's now day four.
hi, the tracking number you sent doesn't work on the courier's site
Could you hold the delivery until after the 20th? We're away on holiday.
Package is stuck at customs in Frankfurt. What do I need to do?
The box was crushed in transit and the lamp inside is in pieces.
Is there any way to change the delivery address after ordering? I moved last week.
still waiting!!!! ordered on the 2nd
Your courier tried to deliver at 7am on a Sunday. Is that normal?
The parcel went to my old address even though I updated it in my account.
We need the pallet brought to the loading bay at the back, not the shop front.
The delivery note lists 12 items but only 9 were in the box.
Can I collect the order from your warehouse in Bristol instead?
my neighbour signed for it and now says she never got it, what can I do
Why was my order split into three shipments?
Dispatch was promised within 24 hours and it still hasn't left.
The courier says the address is incomplete. It's Flat 3B, 22 Mill Lane.
Do you deliver on Saturdays?
I've received someone else's order, a box of printer ink addressed to a Mr Okafor.
Tracking says returned to sender?? I never refused it.
Which courier do you use for Scotland? Some of them won't come out to the islands.
The parcel is sitting at a pickup point 40 km away, not the one I chose.
Ordered the birthday present on Monday, I need it by Friday. Any chance?
Whoever delivered today threw the box over my gate.
Is it possible to book a delivery time slot? I work shifts.
My order has shown "ready to ship" for a week now.
Can you send it in plain packaging? It's a gift for someone I live with.
the package came open and the seal was broken
International shipping to Brazil — will I be asked for import taxes when it arrives?
Hi, no delivery yet and no email either. Order 88213.
The phone number on the order is wrong and the courier needs it, it should end in 447.
Three delivery attempts, each time while I was in. Nobody knocked.
Will the driver carry the wardrobe up to the second floor or just leave it at the door?
I'm in Guernsey and checkout says you can't deliver here. Really?
What's the cut-off time for same-day dispatch?
the box arrived soaking wet and the books inside are ruined
Overnight my estimated delivery changed from 3 June to 19 June. Why?
I need to redirect the parcel to a locker, it's already out for delivery.
My tracking shows it went to Belgium. I live in Bath.
Can the two orders I placed yesterday be shipped together?
Hi! Just checking, has my order been posted yet?
It says delivered to "safe place". Which safe place??
Order still processing after ten days, I'm starting to wonder if it exists.
The van driver was rude and wouldn't wait while I came down the stairs.
Please don't leave my parcels with number 14 anymore.
Do lithium batteries go by air or by road with you?
The depot is holding my parcel for "additional fees". What fees?
Can I add something to my order before it ships?
We're a café and need deliveries before 8am, before the street is closed to traffic.
Nothing has arrived. I am extremely disappointed with your service.
The signature on the proof of delivery isn't mine or anyone's in my family.
Hi team, the shipment got here but without a packing slip, which our goods-in needs.
how do i track it? there's no link in the email
Our business only has a PO box address. Is that OK for deliveries?
It arrived a day early, thanks! Only the second parcel is still missing.
Shipping to Australia shows as $80. Is there a cheaper option?
The courier's website says my parcel was damaged in their depot and is being sent back to you. What now?
Is express available for the blue hoodie or only standard?
package delivered to the wrong house, 41 instead of 14
We've been waiting on the replacement for three weeks and there's still no tracking.
Can somebody confirm the delivery date in writing? My landlord needs to know when the fridge is coming.
Does your free shipping apply to the Channel Islands?
tracking number please
Our warehouse turned the delivery away because it had no booking reference. Can you rebook it?
The box was left in the rain, the cardboard has fallen apart but the kettle seems fine.
Why did the courier change from DPD to Royal Mail halfway?
My parcel has been "out for delivery" three days in a row.
I'll be in hospital next week, can the delivery wait until I'm back?
Shipping said 2-3 days. It's been 2-3 weeks.
The label has a different name on it but the right address. Is it mine?
Could you please send the rest of my order? Only the cables came.
My order went to the billing address instead of the shipping one.
Last time one of the glass vases cracked on the way. Could they be packed better this time?
Does the delivery include taking away the old mattress?
There's a card through my door saying they couldn't deliver, but I was home all day.
Where do I pick up a parcel that went to the post office?
order hasnt shipped yet can i still change it to next day
Can you use a different courier? The local one always loses my stuff.
We're moving offices on the 1st, please send anything after that to Unit 7, Kingsway Park.
Hello, my grandmother ordered a blanket from you and it hasn't come. She's 84 and worried she's been scammed.
How much is delivery to the Isle of Man?
The driver asked me to pay cash for duties on the doorstep. Is that legitimate?
My parcel was handed to the concierge but they say they have nothing.
The order came in four separate boxes over four days, surely that's wasteful.
Stuck in a sorting centre in Leipzig for a week.
Can I get a tracking link for the second shipment? Only the first one came through.
Customs want an invoice before they release the parcel. Can you send them one?
The delivery window was 10 to 12, nobody came, nobody called.
They left it on the doorstep in full view of the street, and it was a laptop.
Is there an option to ship without the retail box, to save space?
Ordered in November, for Christmas. It's the 23rd.
No one has contacted us to arrange the sofa delivery yet.
My son's stationed overseas, can you send things to a BFPO address?
hey it says delivered to a parcel locker but I never got a code to open it
The courier refuses to come to our village because of the road works. Could you use a smaller van?
I'll be at my mum's next week, can the package go there instead?
My order says shipped but tracking only says label created.
Could you tell me the weight of the parcel so I know if I can carry it home from the depot?
Your delivery partner keeps rescheduling without asking me.
The outer box was damaged when it came. Should I accept it next time or refuse it?
Since it was your mistake the two items were left out, can they be sent express?
My parcel is at a neighbour's, but which one? The note doesn't say.
I asked for the side door and the driver left it at the front in the snow.
are you still shipping during the postal strike?
Got the item but tracking still shows in transit. Just letting you know.
What happens if I'm not home when it comes?
The plants spent a week in the post and arrived dried out.
Can you ship to a hotel? I'm staying there for a conference.
I ordered to a friend's address in Lyon but the courier wants a French phone number.
"""

_TECHNICAL = """
The app crashes every time I open the settings page.
After the latest update the printer won't connect to wifi anymore.
Your website shows a blank white page on Safari.
The smart plug keeps going offline at night.
error 502 when I try to check out
Bluetooth pairing fails on my Pixel 7, works fine on my wife's iPhone.
The download link in my email gives a 404.
The thermostat shows 45 degrees when the room is obviously about 20.
Sync between the desktop app and my phone stopped working yesterday.
Hi, the camera's firmware update got stuck at 63% and now it won't turn on.
Charts on the dashboard don't load, just a spinning wheel.
Exporting to CSV puts all the data in a single column.
The speaker makes a buzzing noise at low volume.
it keeps saying "unexpected error, try again later" for two days now. later is now
My bathroom scale gives a different weight each time I step on it.
When I upload a photo bigger than 5 MB the form just resets.
Notifications come through twice on Android.
Our till freezes whenever we scan a barcode that starts with a zero.
Battery goes from full to empty in about three hours since the update.
Searching your site for "kettle" returns nothing, even though you sell kettles.
After switching the language to German, half the buttons are still in English.
The robot vacuum goes round in circles in the hallway and never finds its way back to the base.
Coffee machine shows error E7 and flashes red.
Video calls drop every few minutes on the headset but not through the laptop speakers.
Dark mode makes the text unreadable on the invoices screen.
The API returns a 500 for any request with an accented letter in the name field.
can't scroll past the third page of results on my iPad
The keyboard's F keys stopped working after I installed your driver.
The watch doesn't count my steps when I'm pushing a pram.
The reset button does nothing, even held for 30 seconds.
PDF receipts come out with garbled characters where the £ sign should be.
The app logs me out every time I switch to another app and back.
Our Shopify integration stopped importing orders on Monday.
The e-reader keeps a ghost image of the previous page that never goes away.
Firmware says it's up to date but the release notes mention a newer version than mine.
The light strip turns itself on at 3am.
Clicking "save" on the profile page does nothing — no message, no change.
The oven timer beeps continuously and won't stop until I unplug it.
Is anyone else seeing the map stuck on London? I'm in Glasgow.
The tablet only charges when it's switched off.
after update 4.2 the app won't even open on my samsung
On mobile your checkout button is hidden behind the cookie banner, so you can't tap it.
The drone loses its GPS signal a few seconds after takeoff.
Voice commands work in English but it understands nothing once I set it to Spanish.
The fridge app reports the door as open when it's shut.
I get a certificate warning when I visit your support portal.
Everything in the calendar has been an hour out since the clocks changed.
The mouse double-clicks when I click once.
The barcode scanner in the app can't focus, everything's blurry.
Playback stutters on 4K files but 1080p is fine.
The monitor flickers when brightness is below 30%.
Files in our team's shared folder show up as "0 bytes".
Pasting from Word loses all the formatting and bullet points turn into question marks.
The doorbell camera records the street but not the person actually ringing.
nothing happens when I press pair. light blinks blue then stops
The report emails arrive but the attached spreadsheet is empty.
The heater's display says "HI" and then it switches itself off. Is that a fault?
The installer tells me the file is corrupted on Windows 11.
Home screen widgets don't refresh unless I open the app.
The bike computer resets the trip distance every time it goes to sleep.
The app says I have no internet connection but everything else on the phone works.
Half the product pictures on your site don't load for me, just grey boxes.
The QR code on the box leads to a page that doesn't exist.
Since Tuesday our reports are generated with US dates, which confuses everyone.
Night vision on camera 2 gives a completely white image.
It says "licence invalid" even though we bought it last week.
The hand blender's speed button is stuck on high.
Your web app is incredibly slow today, each page takes 20 seconds.
Printer prints every page twice.
Noise cancelling makes a whooshing sound in the left ear.
My data didn't come across from my old phone to the new one through your app.
The "forgot password" page throws a server error.
My watch face went back to the default after the update and I can't change it.
Apparently it's -40 in my living room, according to the sensor. It isn't.
Our kiosk screen is rotated 90 degrees after every restart.
When the dishwasher finishes, the app still says it's running.
The embed code you gave us breaks the layout of our homepage.
Autosave lost two hours of my work this afternoon.
hi the alarm went off at 4am for no reason, nobody was in the house
The router's admin page won't accept a password longer than 16 characters.
With a screen reader, none of the buttons in the app have labels.
Clicking sound from the fan, only on setting 3.
The map in the app that's supposed to show where my driver is stays blank.
I can't attach files to support tickets, the upload bar reaches 100% and then nothing.
Error 21 on the e-bike display, and no pedal assist at all.
The app crashed during payment and now I don't know if the order went through.
The fitness tracker says my heart rate is 190 while I'm sitting on the sofa.
The bulk import stops at row 1000 without any error.
Every time I plug in the dock, my external monitor goes black.
The sound is out of sync with the picture on the projector.
It's been beeping three times every ten minutes since we installed it. What does that mean?
The app asks for location permission again every single time I open it.
Translations on the German site are mixed up with Dutch.
The scanning software only finds the scanner after I restart the computer twice.
Filters on the search page reset when I press back.
The lock ignores the keypad when it's cold outside.
Hi, print preview comes up empty for every document in the portal.
The charging case shows full but the earbuds are dead.
Graphs show yesterday's figures as zero until midday.
The sewing machine's needle stops in the wrong position.
We upgraded to version 3 and all our custom fields are gone.
Desktop notifications don't appear on macOS Sonoma.
The touchscreen registers touches a centimetre to the left of my finger.
When two people edit the same list, one person's changes vanish.
App stuck on the splash screen.
My smart meter display shows "COMMS ERROR".
The toaster doesn't pop up on its own anymore, I have to lift the lever.
Every link in your newsletter goes to the home page instead of the product.
Uploading a video gives "format not supported" although it's an ordinary MP4.
The baby monitor's sound cuts out after about ten minutes.
The air purifier insists the filter needs changing — it's brand new.
The countdown on the promo page is showing negative numbers.
Keyboard shortcuts don't work in the Linux version.
the cursor jumps to the end of the text box whenever I type a comma
the light on the hub is orange and nothing works
The flow sensor on the tap reads zero even when the water is running.
"""

_ACCOUNT = """
I can't log in, it says my password is wrong but I only just reset it.
How do I change the email address on my account?
never got the verification code
My account has been locked after too many attempts. Can you unlock it?
Please delete my account and all the data you have on me.
Someone logged into my account from Romania. I've never been there.
I lost my phone and now I can't get the two-factor code.
Can I merge my two accounts? I accidentally made one with my work email.
How do I add my colleague as an admin on our business account?
The password reset link expired before I could click it.
My username still has my old surname, I'd like to change it now that I'm married.
Hi, signing in with Google creates a new empty account instead of opening mine.
Is there a way to log out of every device at once?
locked out. again.
The site says my email is already registered but I've never signed up.
I'd like to transfer my account to my daughter.
Why has my account been suspended? Nobody gave me any explanation.
The magic link in the email just takes me back to the login page.
I no longer have access to the email I signed up with.
Could you remove my late husband's account? I have the death certificate if you need it.
Can't remember which email I used. My name is Priya Raman, phone ending 0921.
How do I turn off two-factor authentication? It locks me out whenever I travel.
I want to change the phone number the security codes go to.
My order history has disappeared from my account.
The account page says I'm on the free plan but I paid for Pro.
Please make my profile private.
When I log in I see someone else's name and address!
Is it possible to have two users on one account?
Hello, I got an email saying my password was changed. It wasn't me.
I'm getting "account not found" when I try to sign in with my phone number.
Can I download all the data you hold about me?
The security questions ask for my first pet, but I never set any security questions.
i forgot my password and the reset email goes to spam and then vanishes
Our former employee still has admin access. How do we remove him?
Sign in with Apple hid my email, and now I can't find my account when I log in on the web.
Can you reactivate my account? I closed it last year by mistake.
The login page keeps refreshing without letting me in.
My kid changed my password and I can't get back in.
I'd like a separate login for my accountant so she can see the invoices and nothing else.
I think my account was hacked — there are orders on it that I didn't place.
Account verification keeps failing at the ID photo step.
Do you support passkeys?
Why do I have to sign in again every single day?
Can I change my username? It's my old gamer tag and it's embarrassing now.
Our company rebranded and my email changed. How do I update it without losing everything?
I signed up twice by mistake, please close the newer one.
the code you text me arrives after its already expired
Please unsubscribe me from marketing emails but keep my account open.
How do I give my assistant access without sharing my password?
The verify-your-email link says "invalid token".
I'm the account owner and I want to hand ownership over to our new manager, Dmitri.
I can log in on the app but not on the website.
Is my account still active? I haven't used it for two years.
Got a "suspicious activity" warning and now I'm blocked from logging in.
Where can I see which devices are signed in to my account?
My authenticator app was reset and all the codes are gone.
Hi, I've been locked out since yesterday and I have a deadline today, please help ASAP.
Could the name on the account be changed from Jon to Jonathan? It has to match my ID.
The site won't let me use a password with a space in it.
i want to change my date of birth, it was entered wrong when i signed up
I'm not receiving the login link, and yes I've checked junk.
Could you confirm whether an account exists under this email? I'm helping my dad sort out his subscriptions.
Your system calls mine a "guest account". How do I turn it into a full one?
Please wipe the saved addresses from my profile, I share this laptop.
How do I switch between my personal and business accounts?
I deleted my account but I'm still getting emails from you.
The head teacher has left, so the admin of our school's account needs to change.
Login with Facebook doesn't work anymore since I deleted my Facebook.
Two-step verification sends the codes to a number I don't have anymore.
I've been asked to verify my identity. What documents do you accept?
If you restore my account, will my reward points come back too?
The "remember me" box doesn't remember me.
Our team's accounts should sit under one organisation but they're all separate.
My profile picture won't change no matter what I upload.
I opened the app and was logged in as someone called Hannah.
Please close my account. Reason: I no longer need it.
How do I reset my PIN for the in-store kiosk?
The account settings page has no option to change my email.
Why is my account flagged as "under review"?
I'd like to add a second email address for notifications.
Somebody is using my email to sign up for your service, I keep getting welcome emails.
hey can u reset my login
I changed my password and now the smart speaker has lost access to my account.
My account shows the wrong country and I can't change it.
Is there any way back into an account if I remember neither the email nor the password?
We need single sign-on for our staff accounts. Is that set up on our side or yours?
I keep getting logged into my old account, not the new one.
Can my partner and I share an account but have different passwords?
My membership number doesn't link to my online account.
Is there a minimum age to open an account? My son is 15.
I can't find where to change my notification preferences.
My account was closed for "violating terms" — which terms?
The one-time code email comes in Portuguese and I can't read it.
I set the account up with a typo in my email, gmial instead of gmail.
How long do you keep my data after I delete my account?
Access denied when I try to open my own profile.
Can I change the username on the family account for my youngest?
I got married and my bank card now has a different name from my account. Does that matter?
Please revoke the API keys on our old account, they may have leaked.
i logged in with the wrong account on the shared ipad how do i switch
Why does the site make me create an account just to see prices?
My password manager fills in the password but the form says the field is empty.
We'd like the account's primary contact changed from Sarah to Oliver Nkemelu.
Hello. Logged in fine yesterday; today it says I have no account with you at all.
How do I turn on alerts for new sign-ins?
I want to keep my purchase history but delete my payment and personal details.
Is there a way to set a recovery email?
Account has been "pending approval" for four days.
I tried to delete my account and it says I must cancel active subscriptions first, but I have none.
My student account expired when I graduated. Can it be converted?
Can you stop asking me to verify my phone every time I sign in?
My daughter made an account with my email address, so now I can't make my own.
What happens to my saved lists if I change my email?
The captcha on the sign-in page never accepts my answer.
I've moved abroad — can I keep the same account or do I need a new one for the German store?
Would like to rename our workspace from "Test" to "Forsyth Bakery".
"""

_RETURNS = """
These boots are a size too small, so they're coming back to you.
How do I get my money back for an item that arrived broken?
Still waiting for my refund, it's been three weeks since you received the return.
Can I exchange the blue jumper for a green one?
The returns portal won't accept my order number.
I sent the parcel back with the prepaid label, can you confirm it reached you?
Do I have to pay for return postage?
Refund came through but it's £10 short.
The jacket doesn't fit and I've lost the receipt. Can I still return it?
I want my money back. The product is nothing like the photos.
What's your return policy on opened software?
Can the refund go to a different card? The original one was cancelled.
I returned two items but only one has been refunded.
changed my mind about the sofa, can i send it back
The headphones stopped working after a month, I'd like a replacement pair.
Is it possible to return part of a bundle?
My order came in the wrong colour, I'd like to swap it.
The courier booked to collect my return never turned up.
I was told I'd get store credit but I want the money back on my card.
It's been 32 days, is it too late to return the dress?
The item I returned was rejected for "signs of use". I only tried it on.
Hi, can you send me a returns label? I don't have a printer though.
I received this as a gift and want to return it — can the refund come to me instead of the person who bought it?
The replacement is faulty too. I'd rather just have a refund now.
How long do refunds take to show up on PayPal?
Please cancel my order and refund me, it hasn't shipped yet.
We're on night 60 of the 100-night trial and the mattress is killing my back. How do we send it back?
refund please. broken on arrival
Do you refund the original delivery charge too?
The return label you emailed is for the wrong country.
My refund says processed but there's nothing at the bank.
I bought a kettle in your Manchester store and it's faulty. Can I post it back rather than go in?
Can I return a personalised mug? The engraving has a spelling mistake.
You refunded the wrong item — I sent back the charger, not the cable.
The warranty repair is taking forever, can I just get a refund instead?
I returned the laptop because the screen had dead pixels. Any update?
Why was 15% taken off my refund?
My gift was returned without me knowing and now I'm out of pocket.
Can I swap the 128GB model for the 256GB and pay the difference?
The return drop-off point you listed has closed down.
I sent back the wrong item by mistake. Can you post it back to me?
The trainers fell apart after two weeks, I want a full refund.
Can I get my money back for the unused months of my subscription?
What condition does the packaging need to be in for a return?
My refund was sent as a voucher, I never asked for that.
Hello, I ordered three sizes to try, keeping the medium and sending the other two back. One label or two?
You've sent me a replacement, but I asked for a refund.
The blender leaks from the bottom. I'd like to return it under warranty.
returned the parcel 2 weeks ago tracking shows you signed for it still no money
Is the refund faster if I bring it back to a store?
The rug smells of chemicals. Can I still send it back even though I've unrolled it?
Could you cancel the return? I've decided to keep the chair after all.
I'm two days outside the return window because I was in hospital. Please make an exception.
Do sale items count for returns?
The refund went to my old bank account, which is closed now.
We over-ordered wine for the wedding. Will you take the unopened bottles back?
The replacement part you sent doesn't fit my model either.
Please arrange collection of the faulty washing machine, it's too heavy for me to take anywhere.
Why does the returns form ask for a reason? I just don't want it.
The item was a duplicate gift, could I exchange it for something else of the same value?
i got refunded for the shoes but not the shipping
I've been trying to send this printer back for a month and keep getting passed around.
My return was marked "received damaged" but it was fine when I posted it.
Can I take the lamp back to a different branch from the one I bought it in?
The dog bed is too small for my Labrador, can I exchange it for the XL?
We got a partial refund, but the whole order was wrong.
Turns out I prefer paper books. Can the e-reader go back?
Do I need the original box to send it back?
The returns address in your email is different from the one on the website. Which is right?
The part of the order that never arrived should be refunded, not resent.
Can you refund me in cash? I paid cash in the shop.
I've attached photos of the damage. Can we sort out a refund?
The post office wouldn't accept my return because of the battery inside.
Hi, the shirt shrank after one wash even though I followed the label. I'd like my money back.
Does the 14-day return period start when I ordered or when it arrived?
The refund amount doesn't include the gift wrapping I paid for.
I opened a return but it was closed automatically without anything happening.
I want a refund for the concert tickets, the event was moved to a date I can't make.
I dropped the return off at the locker but didn't get a receipt.
Exchange request: size 10 to size 11, same style.
I'm not happy with the quality and would like to send everything back.
How do I return something I bought with a gift card? Does the balance go back on the card?
The glasses frames snapped within a week. Replacement or refund, either is fine.
I was promised a refund on the phone last Tuesday and nothing has happened.
The made-to-measure blind came out 2cm too short. Is it returnable, given it was cut to size?
Second time asking: where is my refund?
I'd like to send back the 6 chairs and keep the table.
The returned item is back at your warehouse, tracking confirms it. Please process the credit.
My refund has been "pending" for ten working days.
The baby car seat I bought has been recalled. How do I return it?
Do you take back the old appliance if I return the new one?
they refunded me twice by mistake, how do i pay one back?
Hi, we returned the monitor under the 30-day guarantee and haven't heard a thing since.
I'm returning the puzzle because there are pieces missing.
The return label has already expired. Can I have a new one?
I received the wrong book and want to exchange it for the one I actually ordered.
I'm abroad now — can I still send the return from Spain?
Can I return the perfume if the seal isn't broken?
The refund form rejects my IBAN.
Please let me know whether my return has been accepted, order 44019.
The vacuum cleaner's suction is weak straight out of the box. I want to return it.
I'm within 30 days but you're saying the item is "final sale". It wasn't marked that way.
Can you collect the old TV when you deliver the exchange?
I'd like a refund on the unused gift voucher.
The parcel I returned was lost by the courier. Who's responsible?
The socks in the multipack are all odd sizes, can I return just that pack?
My return shows as delivered to you, but your system doesn't show it.
The trial didn't work out for us. How do we get the first month's money back?
i dont want the replacement either just want my money
If I keep the free gift, do you take its value off my refund?
You cut my refund because the returned tent was supposedly missing pegs. It wasn't.
Can I return hiking boots I've worn outside once? They gave me blisters.
Is there a way to get a refund without sending the broken glass back? It's dangerous to pack.
Just to confirm — will the refund go to Apple Pay or to the card behind it?
Returned the coat in person at the Leeds shop, they said the refund would take 3 days. It's been 10.
We'd like to return a whole pallet of unsold stock. Do you accept trade returns?
"""

_PRESALES = """
Does the 12-cup coffee maker have a timer?
Is this jacket fully waterproof or just water resistant?
What's the difference between the Pro and the Standard version?
Will the 65W charger work with my MacBook Air?
do you have this in a size 8
We have two cats who love to scratch — would the sofa fabric survive them?
How loud is the dishwasher? I live in a small flat with thin walls.
Can I buy replacement filters separately?
Solid oak or veneer on the dining table?
Does the software run on Linux?
When will the grey colour be back in stock?
Any student discount going?
Does a memory card come with the camera?
Hi, I'm choosing between the two hiking boots, which is better for wide feet?
Can the wall bracket hold a 55-inch TV?
My partner's vegan — anything animal-derived in the protein powder?
How many users can we have on the starter plan?
our IT guy says we need WPA3 – does that router have it?
Hello, do you do bulk pricing for schools? We'd need about 40.
quick one: kettle BPA free or not
what's the battery life like on the wireless earbuds
I've got thick shag carpets everywhere. Would this vacuum cope?
Can I try the app before buying?
I sleep on my side and wake up with a sore shoulder. Which mattress would you suggest?
Do you sell gift cards?
How big is the suitcase when it's expanded?
Are your candles soy or paraffin?
If I go running without my phone, will the watch still track the route?
Can it go in the washing machine?
Will there be a Black Friday sale this year?
Does the printer do double-sided printing automatically?
I'm 6'4" — would the bike frame be big enough for me?
Is assembly included in the price?
Any chance of a demo for our team next week?
Is the rug OK to use over underfloor heating?
Which model would you recommend for a small café doing about 100 coffees a day?
Does your CRM integrate with Xero?
I want to buy a present for my dad, he likes fishing. What would you suggest?
Can you engrave a name on the back?
Before I sign up, is the plan billed monthly or yearly?
How long is the warranty on the washing machines?
Do your shoes run true to size?
is this compatible with the older model's charging dock
Are hooks included with the curtains or do I need to buy them?
I make a lot of smoothies with frozen fruit and ice, which of your blenders can take that?
Could I use this paint on an outdoor fence?
Is the RAM soldered on that laptop or could I add more in a couple of years?
We're opening a second shop and looking at your POS system. Can it handle two locations?
Our baby's due in March. Could we use the carrier from day one or does she need to be bigger?
Where is the cheese made?
Hi there, I'm allergic to nickel. Is the buckle on the watch strap nickel-free?
Before I order: does the price include import duties for Switzerland?
How many pages does one toner cartridge print?
The tent says four people — four adults, or four children?
will the lamp work with the dimmer switch I already have
What's the thread count of the duvet cover?
My mum doesn't read German — does the manual come in English too?
My last sunglasses got scratched within a month. Do these lenses have any coating against that?
I'm interested in the enterprise plan, who should I talk to?
Can I pre-order the new edition?
Dishwasher safe? The chopping board, I mean.
I'll be lifting the stroller into a car boot every day, so the folded weight matters. What is it?
What would I get if I traded in my old phone?
Does the heater switch itself off if it gets knocked over?
Is your chocolate made somewhere free of nuts? My daughter has a severe allergy.
can it connect to alexa
I'm left-handed, do you make the scissors the other way round?
I'm comparing you with another provider — do you have phone support at weekends?
How much storage comes with the basic subscription?
How far does the desk go up and down?
Will the phone case still fit with a screen protector on?
Are batteries included?
I'd love the planner but undated, so I can start it mid-year. Do you make one?
Can we get a quote for 200 branded notebooks?
Which of your mattresses is the firmest?
We're often on boats without signal. Will the app still work out there?
I'm thinking of buying the e-bike. What's the range on one charge?
Can the frying pan go in the oven, handle and all?
is the hoodie unisex
If we sign up, does our data stay in the EU?
What's in the starter kit exactly?
Drill plus case, or is the case sold separately?
Will these plant pots survive a frost?
Hello! Would the 2-seater fit through a 70cm doorway?
Starting a podcast with a friend on a budget — would that USB mic sound decent enough?
What age is the science kit aimed at?
Can your tea be cold-brewed?
How often do you restock the limited prints?
Any refurbished ones available? New is a bit out of budget.
Our front door is 35 mm thick. Will the smart lock fit it?
Is there something cheaper than the premium headphones that's still wireless?
I'd like to know whether the course certificate is accredited.
We're decorating a nursery, so we want paint without strong fumes. Would yours be suitable?
Can I add more users later without changing plans?
I always carry my phone in an inside pocket – has this coat got one?
Sterling silver, or plated? Asking about the hoop earrings.
I'm short in the arm. Do you do alterations on jackets in store?
Love the bookcase, but our room is all white — any other finishes?
How many watts is the microwave? Ready meals always give times for 800W.
Apart from the price, how do the two robot vacuums differ?
Would this keyboard work with an iPad?
My dog is allergic to chicken. Is there any in this food?
Can we try the meal kit for a week before committing to a subscription?
Will the older model get the new firmware features, and when?
Can I see fabric samples before ordering?
Do couples get a reduced price on the gym membership?
Do you have a store in Dublin?
Which cable do I need to connect it to a TV?
I dye my hair every 6 weeks, would this shampoo strip the colour?
For photo editing, would you recommend the 27" or the 32" monitor?
how bright are the solar lights really? thinking of lining the driveway with them
Before I commit — can I cancel anytime, or is there a minimum contract?
Does the pram come with a rain cover?
hi, is the bread flour organic
What's the maximum weight the shelf can take?
My daughter wants to make jeans. Can the sewing machine handle denim?
"""

CATEGORIES = ("billing", "delivery", "technical", "account", "returns", "pre-sales")
_BLOCKS = (_BILLING, _DELIVERY, _TECHNICAL, _ACCOUNT, _RETURNS, _PRESALES)
TEXTS = [(line, index) for index, block in enumerate(_BLOCKS) for line in block.strip().splitlines()]


def few_shot(k: int, seed: int) -> tuple[list, list]:
    """``k`` (text, category) pairs of each category for training, drawn with ``seed``, and every other pair held
    out; both in the order of ``TEXTS``."""
    rng = random.Random(seed)
    chosen = set()
    for index in range(len(CATEGORIES)):
        rows = [row for row, (_, category) in enumerate(TEXTS) if category == index]
        if not 0 < k < len(rows):
            raise ValueError(f"few_shot: k={k} must be between 1 and {len(rows) - 1} "
                             f"(category {CATEGORIES[index]!r} has {len(rows)} texts)")
        chosen.update(rng.sample(rows, k))
    train = [TEXTS[row] for row in sorted(chosen)]
    test = [pair for row, pair in enumerate(TEXTS) if row not in chosen]
    return train, test
